"""What the venv builder reads from a Dockerfile's RUN steps, and the model of git-less images."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.space_runtime.builders import VenvBuilder
from releaselib.space_runtime.installs import plan_installs
from releaselib.space_runtime.plan import BuildError
from releaselib.space_runtime.process import Layout, lay_out
from releaselib.stage import git_needs
from tests.space_runtime.spaces import OPENENV_PIN, openenv_space

PIN = f'"{OPENENV_PIN}"'
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def layout_of(tmp_path: Path, dockerfile: str, files: dict[str, str] | None = None) -> Layout:
    tree = tmp_path / "tree"
    for path, text in {"Dockerfile": dockerfile, **(files or {})}.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    return lay_out(tree, tmp_path / "work", base_path="/usr/bin")


def test_a_staged_openenv_space_installs_its_project_once_from_the_builder_stage(tmp_path: Path) -> None:
    tree = openenv_space(tmp_path / "s", "x_env", imports="inflection", declares=["inflection"])
    layout = lay_out(tree, tmp_path / "work", base_path="/usr/bin")
    [install] = plan_installs(layout)  # both branches of `if [ -f uv.lock ]` name the same sync
    assert install.tool == "uv" and install.args == (str(layout.roots[0] / "app/env"),)
    assert install.requirements == (OPENENV_PIN, "inflection")


def test_pip_lines_map_files_paths_and_packages_onto_the_stage_root(tmp_path: Path) -> None:
    layout = layout_of(
        tmp_path,
        "FROM python:3.11\nWORKDIR /srv\nCOPY . .\n"
        "RUN pip install --no-cache-dir -r requirements-dev.txt && pip install -e . \\\n"
        "    && DEBIAN_FRONTEND=noninteractive python -m pip install -U 'tabulate==0.9.0'\n"
        "RUN uv pip install --system --index-url https://pypi.org/simple smolagents\n"
        "ENV PYTHONPATH=/srv\nCMD [\"python\", \"-m\", \"app\"]\n",
        {"requirements-dev.txt": "inflection  # for names\n-c constraints.txt\n", "pyproject.toml": ""},
    )
    root = layout.root / "srv"
    assert [(i.tool, i.args, i.requirements) for i in plan_installs(layout)] == [
        ("pip", ("-r", str(root / "requirements-dev.txt")), ("inflection",)),
        ("pip", ("-e", str(root)), ()),
        ("pip", ("-U", "tabulate==0.9.0"), ("tabulate==0.9.0",)),
        ("uv", ("--index-url", "https://pypi.org/simple", "smolagents"), ("smolagents",)),
    ]


@pytest.mark.parametrize(
    ("image", "run", "says"),
    [
        ("ghcr.io/huggingface/openenv-base:latest", f"uv pip install --system {PIN}", "Git executable not found"),
        ("python:3.11-slim", f"pip install {PIN}", "Cannot find command 'git'"),
    ],
)
def test_a_git_requirement_on_an_image_without_git_fails_like_the_tool(
    tmp_path: Path, image: str, run: str, says: str
) -> None:
    layout = layout_of(tmp_path, f"FROM {image}\nRUN {run}\nCMD [\"python\"]\n")
    with pytest.raises(BuildError) as failure:
        plan_installs(layout)
    assert failure.value.message.startswith("line 2: ") and says in failure.value.message


@pytest.mark.parametrize(
    "dockerfile",
    [
        "FROM python:3.11-slim\nRUN apt-get update && apt-get install -y git\nRUN pip install {pin}\n",
        "FROM python:3.11-slim AS b\nRUN apt-get install -y --no-install-recommends git\nFROM b\nRUN pip install {pin}\n",
        "FROM python:3.11\nRUN pip install {pin}\n",  # the full image has git
    ],
)
def test_git_installed_first_or_present_in_the_image_builds(tmp_path: Path, dockerfile: str) -> None:
    layout = layout_of(tmp_path, dockerfile.format(pin=PIN) + 'CMD ["python"]\n')
    assert [i.requirements for i in plan_installs(layout)] == [(OPENENV_PIN,)]


# RUN lines on python:3.11-slim (no git), and whether the stage has git for the git+ pin: forms
# the builder once read differently from staging's git check (sh -c, a versioned or pathed
# package manager, git removed again, an install inside sh -c).
GIT_FORMS = [
    ('sh -c "apt-get update && apt-get install -y git" && pip install {pin}', True),
    ("apt-get install -y git=1:2.39.5-0+deb12u1 && pip install {pin}", True),
    ("/usr/bin/apt-get install -y git && pip install {pin}", True),
    ("sudo apt-get install -y git && pip install {pin}", True),
    ("apt-get install -y git && apt-get purge -y git\nRUN pip install {pin}", False),
    ("sh -c 'pip install \"{bare}\"'", False),
    ("echo apt-get install git && pip install {pin}", False),
    ("{{ apt-get install -y git; }} && pip install {pin}", True),  # a { } group
    ("{{ pip install {pin}; }}", False),
]


@pytest.mark.parametrize(("run", "has_git"), GIT_FORMS)
def test_the_builder_and_staging_agree_on_whether_a_stage_has_git(
    tmp_path: Path, run: str, has_git: bool
) -> None:
    text = f'FROM python:3.11-slim\nRUN {run.format(pin=PIN, bare=OPENENV_PIN)}\nCMD ["python"]\n'
    layout = layout_of(tmp_path, text)
    staging_needs_git = list(git_needs.missing_git(Dockerfile.parse(text), tmp_path / "tree"))
    assert bool(staging_needs_git) is not has_git
    if has_git:
        assert [i.requirements for i in plan_installs(layout)] == [(OPENENV_PIN,)]
    else:
        with pytest.raises(BuildError, match="Cannot find command 'git'"):
            plan_installs(layout)


def test_git_installed_later_in_the_same_run_is_too_late(tmp_path: Path) -> None:
    run = f"pip install {PIN} && apt-get update && apt-get install -y git"
    layout = layout_of(tmp_path, f'FROM python:3.11-slim\nRUN {run}\nCMD ["python"]\n')
    with pytest.raises(BuildError, match="Cannot find command 'git'"):
        plan_installs(layout)


def test_a_build_over_its_timeout_is_a_build_error_naming_it(tmp_path: Path) -> None:
    layout = layout_of(tmp_path, 'FROM python:3.11\nRUN pip install inflection\nCMD ["python"]\n')
    builder = VenvBuilder(tmp_path / "builder", timeout=0.001)
    with pytest.raises(BuildError, match=r"took longer than 0\.001 s"):
        builder.build(layout, tmp_path / "env", tmp_path / "build.log")
    assert "took longer" in (tmp_path / "build.log").read_text()


@pytest.mark.venv
def test_the_openenv_pin_is_served_from_the_checkout_built_once_into_a_wheel(tmp_path: Path) -> None:
    checkout = tmp_path / "OpenEnv"
    (checkout / "src" / "openenv_core").mkdir(parents=True)
    (checkout / "src" / "openenv_core" / "__init__.py").write_text("")
    (checkout / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "openenv"\nversion = "0.3.0"\n'
    )
    for git in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "0.3.0"], ["tag", "v0.3.0"]):
        subprocess.run(["git", "-C", str(checkout), *git], check=True, capture_output=True, env=GIT_ENV)
    layout = layout_of(tmp_path, f'FROM python:3.11\nRUN pip install {PIN}\nCMD ["python"]\n')
    builder = VenvBuilder(tmp_path / "builder", openenv=checkout)
    for env in ("one", "two"):
        builder.build(layout, tmp_path / env, tmp_path / f"{env}.log")
    overrides = (tmp_path / "two" / "overrides.txt").read_text()
    assert overrides.startswith("openenv[core] @ file://") and ".whl" in overrides
    assert "building OpenEnv" in (tmp_path / "one.log").read_text()
    assert "building OpenEnv" not in (tmp_path / "two.log").read_text()
    assert list((tmp_path / "two" / "lib").glob("python3*/site-packages/openenv_core"))


@pytest.mark.parametrize(
    ("image", "carries"),
    [
        ("ghcr.io/huggingface/openenv-base:latest", True),
        ("envtorch-base:latest", True),  # the legacy name, as examples/envs/legacy_env uses it
        ("python:3.11-slim", False),
    ],
)
def test_an_openenv_base_image_carries_the_checkouts_dependencies_and_core_extra(
    tmp_path: Path, image: str, carries: bool
) -> None:
    from releaselib.space_runtime.installs import base_image_installs

    checkout = tmp_path / "OpenEnv"
    checkout.mkdir()
    (checkout / "pyproject.toml").write_text(
        '[project]\nname = "openenv"\nversion = "1"\ndependencies = ["fastapi>=0.104"]\n'
        '[project.optional-dependencies]\ncore = ["uvicorn>=0.24"]\ncli = ["typer"]\n'
    )
    layout = layout_of(tmp_path, f"FROM {image}\nCOPY . /app\nCMD [\"uvicorn\", \"app:app\"]\n")
    installs = base_image_installs(layout, checkout)
    if not carries:
        assert installs == []
        return
    [install] = installs
    assert install.args == ("-r", str(checkout / "pyproject.toml"), "--extra", "core")
    assert install.requirements == ("fastapi>=0.104", "uvicorn>=0.24")
    # without a checkout to read, the registry's openenv-core stands in for it
    assert [i.args for i in base_image_installs(layout, None)] == [("openenv-core",)]
