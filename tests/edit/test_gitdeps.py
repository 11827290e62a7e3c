"""Git goes into every build stage that installs a git+ requirement (releaselib.edit.gitdeps).

Each case is a small build context written here; golden/git/<case>.expected is the rewritten
Dockerfile and <case>.changes.json its recorded changes. UPDATE_GOLDEN=1 rewrites them.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from releaselib.stage.checks import check_git
from releaselib.stage.staged_dockerfile import rewrite_for_space
from tests.helpers import assert_golden

GOLDEN = Path(__file__).parent / "golden" / "git"
BASE = "ghcr.io/huggingface/openenv-base:latest"
PIN = "openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.2.2"
PYPROJECT = f'[project]\nname = "demo"\nversion = "0"\ndependencies = ["{PIN}"]\n'

CASES: dict[str, dict[str, str]] = {
    "direct_url_slim": {
        "Dockerfile": (
            "FROM python:3.11-slim\nWORKDIR /app\n"
            "RUN pip install --no-cache-dir 'openenv[core]>=0.2.2'\nCMD [\"python\"]\n"
        ),
    },
    "nested_requirements": {
        "Dockerfile": (
            "FROM python:3.11-slim\nWORKDIR /app\nCOPY requirements.txt reqs/ ./\n"
            "RUN pip install --no-cache-dir -r requirements.txt\n"
        ),
        "requirements.txt": "fastapi\n-r reqs/base.txt\n",
        "reqs/base.txt": "-c constraints.txt\nuvicorn\n",
        "reqs/constraints.txt": f"{PIN}\n",
    },
    "uv_sync_pyproject": {
        "Dockerfile": (
            "ARG BASE_IMAGE=openenv-base:latest\nFROM ${BASE_IMAGE} AS builder\n"
            "WORKDIR /app/env\nCOPY . /app/env\n"
            "RUN --mount=type=cache,target=/root/.cache/uv \\\n    uv sync --frozen --no-editable\n"
            "FROM ${BASE_IMAGE}\nCOPY --from=builder /app/env /app/env\n"
        ),
        "pyproject.toml": PYPROJECT,
    },
    "pip_install_dot_alpine": {
        "Dockerfile": "FROM python:3.12-alpine\nWORKDIR /srv\nCOPY . .\nRUN pip install .\n",
        "pyproject.toml": PYPROJECT,
    },
    "non_root_user": {
        "Dockerfile": (
            "FROM nvidia/cuda:11.8.0-runtime-ubuntu22.04\nUSER carla\nWORKDIR /home/carla\n"
            "RUN pip install git+https://github.com/huggingface/OpenEnv.git\n"
        ),
    },
    "cd_then_pip_install_path": {
        "Dockerfile": (
            "FROM python:3.11-slim\nCOPY . /app\n"
            "RUN cd /app && pip install --no-cache-dir ./envs/demo/\n"
        ),
        "envs/demo/pyproject.toml": PYPROJECT,
    },
}
# Installs the reading cannot follow to a file fall back to "the tree names a git+ requirement".
REQS = {"requirements.txt": f"{PIN}\n", "server/pyproject.toml": PYPROJECT}
SLIM_APP = "FROM python:3.11-slim\nWORKDIR /app\nCOPY . /app\n"
CASES |= {
    "bind_mount_requirements": {
        "Dockerfile": SLIM_APP + "RUN --mount=type=bind,source=requirements.txt,"
        "target=/tmp/requirements.txt pip install -r /tmp/requirements.txt\n",
        **REQS,
    },
    "heredoc_run": {
        "Dockerfile": SLIM_APP + "RUN <<EOT\nset -e\npip install -r requirements.txt\nEOT\n",
        **REQS,
    },
    "python_m_uv_sync": {
        "Dockerfile": SLIM_APP + "RUN python -m uv sync\n",
        "pyproject.toml": PYPROJECT,
    },
    "uv_global_option_sync": {
        "Dockerfile": SLIM_APP + "RUN uv --no-cache --directory server sync\n",
        **REQS,
    },
    "uv_pip_sync": {"Dockerfile": SLIM_APP + "RUN uv pip sync requirements.txt\n", **REQS},
    "env_variable_requirements": {
        "Dockerfile": SLIM_APP + "ENV REQ=requirements.txt\nRUN pip install -r ${REQ}\n",
        **REQS,
    },
    "pip_install_parent_path": {
        "Dockerfile": SLIM_APP + "RUN pip install server/../\n",
        "pyproject.toml": PYPROJECT,
    },
    "apk_virtual_removed": {
        "Dockerfile": "FROM python:3.12-alpine\nWORKDIR /app\nCOPY . /app\n"
        "RUN apk add --virtual .build-deps gcc git && pip install -r requirements.txt "
        "&& apk del .build-deps\nRUN pip install -r requirements.txt\n",
        **REQS,
    },
    "apt_purge_removed": {
        "Dockerfile": SLIM_APP + "RUN apt-get update && apt-get install -y git "
        "&& pip install -r requirements.txt && apt-get purge -y git\n"
        "RUN pip install ./server\n",
        **REQS,
    },
    # Text that only mentions a git install installs nothing: commands are parsed.
    "echo_mentions_git_install": {
        "Dockerfile": SLIM_APP + "RUN echo apt-get install -y git\n"
        "RUN /venv/bin/pip install -r requirements.txt\n",
        **REQS,
    },
}
UNCHANGED: dict[str, dict[str, str]] = {
    "git_installed_first": {
        "Dockerfile": (
            "FROM python:3.11-slim\nRUN apt-get update && apt-get install -y git\n"
            f"RUN pip install '{PIN}'\n"
        ),
    },
    "builder_has_git": {
        "Dockerfile": (
            "FROM python:3.11-slim AS builder\nRUN apt-get install -y git curl\n"
            f"FROM builder\nRUN pip install '{PIN}'\n"
        ),
    },
    "git_installed_in_sh_c": {
        "Dockerfile": (
            "FROM python:3.11-slim\nRUN DEBIAN_FRONTEND=noninteractive sh -c "
            "'apt-get -o Acquire::Retries=3 update && apt-get -o Acquire::Retries=3 install -y "
            f"git=1:2.39*'\nRUN pip install '{PIN}'\n"
        ),
    },
    "full_python_image": {"Dockerfile": f"FROM python:3.11\nRUN pip install '{PIN}'\n"},
    "requirements_without_git": {
        "Dockerfile": "FROM python:3.11-slim\nCOPY r.txt .\nRUN pip install -r r.txt\n",
        "r.txt": "fastapi\n",
    },
}


def write(tree: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)


def rewrite(tree: Path) -> tuple[str, list]:
    return rewrite_for_space(
        (tree / "Dockerfile").read_text(),
        path="Dockerfile",
        base_image=BASE,
        dist="openenv",
        ref="v0.2.2",
        context=tree,
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_git_is_installed_before_the_first_install_that_needs_it(tmp_path: Path, case: str) -> None:
    write(tmp_path, CASES[case])
    assert list(check_git(tmp_path)) or "'openenv" in CASES[case]["Dockerfile"]
    text, changes = rewrite(tmp_path)
    git = [dataclasses.asdict(c) for c in changes if "no git" in c.why]
    assert_golden(GOLDEN / f"{case}.expected", text)
    assert_golden(GOLDEN / f"{case}.changes.json", json.dumps(git, indent=2) + "\n")
    assert len(git) == 1
    (tmp_path / "Dockerfile").write_text(text)
    assert list(check_git(tmp_path)) == []  # the check proves the fix
    assert rewrite(tmp_path)[0] == text  # and a second rewrite adds nothing


@pytest.mark.parametrize("case", sorted(UNCHANGED))
def test_no_git_is_added_where_it_is_there_or_not_needed(tmp_path: Path, case: str) -> None:
    write(tmp_path, UNCHANGED[case])
    _, changes = rewrite(tmp_path)
    assert [c for c in changes if "no git" in c.why] == []
    assert list(check_git(tmp_path)) == []


def test_without_a_context_no_git_is_added() -> None:
    text, changes = rewrite_for_space(
        CASES["direct_url_slim"]["Dockerfile"],
        path="Dockerfile",
        base_image=BASE,
        dist="openenv",
        ref="v0.2.2",
    )
    assert "apt-get" not in text and not [c for c in changes if "no git" in c.why]


@pytest.mark.parametrize(
    ("image", "command"),
    [
        ("registry.access.redhat.com/ubi9/ubi-minimal:9.4", "microdnf install -y git"),
        ("fedora:40", "dnf install -y git"),
        ("rockylinux:9", "dnf install -y git"),
        ("amazonlinux:2", "yum install -y git"),
        ("python:3.12-alpine3.20", "apk add --no-cache git"),
        ("mcr.microsoft.com/playwright/python:v1.44.0-jammy", "apt-get install"),
    ],
)
def test_git_is_installed_with_the_base_image_familys_package_manager(
    tmp_path: Path, image: str, command: str
) -> None:
    write(tmp_path, {"Dockerfile": f"FROM {image}\nRUN pip install '{PIN}'\n"})
    text, _ = rewrite(tmp_path)
    assert command in text
    (tmp_path / "Dockerfile").write_text(text)
    assert list(check_git(tmp_path)) == []


def test_an_unknown_image_family_gets_no_guess_and_the_check_names_the_stage(
    tmp_path: Path,
) -> None:
    write(tmp_path, {"Dockerfile": f"FROM example.com/mystery:1 AS app\nRUN pip install '{PIN}'\n"})
    text, changes = rewrite(tmp_path)
    assert "git" not in text.split("RUN pip")[0] and not [c for c in changes if "no git" in c.why]
    (tmp_path / "Dockerfile").write_text(text)
    [finding] = check_git(tmp_path)
    assert "stage app" in finding.message and "example.com/mystery:1" in finding.message
    assert finding.remedy == "install git in your Dockerfile before that RUN"
