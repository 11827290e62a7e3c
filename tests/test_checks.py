"""Each built-in static check fails on a tree with exactly its problem and passes once fixed."""

from __future__ import annotations

from pathlib import Path

import pytest

from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.records import Check, Finding
from releaselib.stage import checks

README = """\
---
title: Echo
emoji: 🔊
colorFrom: blue
colorTo: green
sdk: docker
app_port: 8000
tags:
  - openenv
---
# Echo
"""

# A small openenv-style env: builder copies the context, runtime copies from the builder.
GOOD_DOCKERFILE = """\
FROM ghcr.io/huggingface/openenv-base:latest AS builder
WORKDIR /app/env
COPY . /app/env
RUN apt-get update && apt-get install -y --no-install-recommends git
RUN uv sync --no-editable

FROM ghcr.io/huggingface/openenv-base:latest
COPY --from=builder /app/env /app/env
ENV PYTHONPATH="/app/env:$PYTHONPATH"
CMD ["sh", "-c", "cd /app/env && uvicorn server.app:app"]
"""

PYPROJECT = """\
[project]
name = "echo-env"
dependencies = ["openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.3.1"]
"""


def make_tree(
    root: Path, dockerfile: str = GOOD_DOCKERFILE, files: dict[str, str] | None = None
) -> Path:
    """A staged tree: Dockerfile, README.md, the env at the root, envs/echo_env, src/."""
    tree = {
        "Dockerfile": dockerfile,
        "README.md": README,
        "pyproject.toml": PYPROJECT,
        "server/__init__.py": "",
        "server/app.py": "app = None\n",
        "envs/echo_env/pyproject.toml": PYPROJECT,
        "src/openenv/__init__.py": "",
        **(files or {}),
    }
    for name, text in tree.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def run(name: str, root: Path) -> list[Finding]:
    check = {c.name: c for c in checks.openenv_release_checks()}[name]
    return list(check.run(root))


def only(findings: list[Finding]) -> Finding:
    assert len(findings) == 1, findings
    return findings[0]


@pytest.mark.parametrize("check", [c.name for c in checks.openenv_release_checks()])
def test_a_good_tree_passes_every_check(tmp_path: Path, check: str) -> None:
    assert run(check, make_tree(tmp_path)) == []


def test_the_plugin_registers_through_pluggy() -> None:
    registry = PluginRegistry(get_plugin_manager(["releaselib.stage.checks"], entry_points=False))
    names = [owned.record.name for owned in registry.checks()]
    assert names == [c.name for c in checks.openenv_release_checks()]
    assert all(isinstance(owned.record, Check) for owned in registry.checks())


# -- dockerfile-parses --------------------------------------------------------------------------


def test_parses_reports_an_unknown_instruction(tmp_path: Path) -> None:
    make_tree(tmp_path, GOOD_DOCKERFILE + "FOO bar\n")
    finding = only(run("dockerfile-parses", tmp_path))
    assert "Dockerfile:11: unknown instruction FOO" in finding.message
    assert run("cmd-json-form", tmp_path) == []  # the others stay quiet


def test_parses_reports_a_missing_dockerfile(tmp_path: Path) -> None:
    make_tree(tmp_path).joinpath("Dockerfile").unlink()
    assert only(run("dockerfile-parses", tmp_path)).message == "no Dockerfile"


# -- stdlib-shadowing ---------------------------------------------------------------------------


def test_shadowing_module_in_a_pythonpath_dir(tmp_path: Path) -> None:
    make_tree(tmp_path, files={"types.py": "GenericAlias = None\n"})
    finding = only(run("stdlib-shadowing", tmp_path))
    assert (finding.file, finding.line) == ("Dockerfile", 9)
    assert "/app/env holds types.py, which shadows the stdlib module types" in finding.message
    (tmp_path / "types.py").rename(tmp_path / "env_types.py")
    assert run("stdlib-shadowing", tmp_path) == []


def test_shadowing_package_reached_through_a_legacy_core_copy(tmp_path: Path) -> None:
    dockerfile = """\
FROM python:3.11-slim
COPY src/core/ /app/src/core/
ENV PYTHONPATH=/app/src/core:/app/src
CMD ["uvicorn", "core.app:app"]
"""
    make_tree(tmp_path, dockerfile, {"src/core/logging/__init__.py": "", "src/core/app.py": ""})
    finding = only(run("stdlib-shadowing", tmp_path))
    assert "src/core/logging, which shadows the stdlib module logging" in finding.message
    assert finding.line == 3
    fixed = dockerfile.replace("/app/src/core:/app/src", "/app/src")
    make_tree(tmp_path, fixed)
    assert run("stdlib-shadowing", tmp_path) == []


def test_shadowing_ignores_nested_modules_and_namespace_dirs(tmp_path: Path) -> None:
    make_tree(tmp_path, files={"server/types.py": "", "json/data.txt": ""})
    assert run("stdlib-shadowing", tmp_path) == []


# -- git-for-git-deps ---------------------------------------------------------------------------


def test_git_url_in_a_run_line_without_git(tmp_path: Path) -> None:
    dockerfile = """\
FROM python:3.11-slim
RUN pip install "openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.3.1"
CMD ["python", "-m", "server.app"]
"""
    make_tree(tmp_path, dockerfile)
    finding = only(run("git-for-git-deps", tmp_path))
    assert finding.line == 2
    assert "git+https://github.com/huggingface/OpenEnv.git@v0.3.1" in finding.message
    assert "apt-get install" in finding.remedy
    fixed = dockerfile.replace("RUN pip", "RUN apt-get update && apt-get install -y git\nRUN pip")
    make_tree(tmp_path, fixed)
    assert run("git-for-git-deps", tmp_path) == []


def test_uv_sync_of_a_pyproject_with_a_git_dependency(tmp_path: Path) -> None:
    no_git = GOOD_DOCKERFILE.replace("--no-install-recommends git", "--no-install-recommends gcc")
    make_tree(tmp_path, no_git)
    finding = only(run("git-for-git-deps", tmp_path))
    assert finding.line == 5
    assert "stage builder installs pyproject.toml's dependency" in finding.message
    make_tree(tmp_path, GOOD_DOCKERFILE)
    assert run("git-for-git-deps", tmp_path) == []


def test_pip_install_of_a_local_project_follows_the_path(tmp_path: Path) -> None:
    dockerfile = """\
FROM python:3.11-slim
WORKDIR /app
COPY envs/echo_env/ ./envs/echo_env/
RUN pip install --no-cache-dir ./envs/echo_env/
CMD ["python", "-m", "server.app"]
"""
    make_tree(tmp_path, dockerfile)
    finding = only(run("git-for-git-deps", tmp_path))
    assert "envs/echo_env/pyproject.toml's dependency" in finding.message
    no_git = PYPROJECT.replace(" @ git+https://github.com/huggingface/OpenEnv.git@v0.3.1", "")
    make_tree(tmp_path, dockerfile, {"envs/echo_env/pyproject.toml": no_git})
    assert run("git-for-git-deps", tmp_path) == []


def test_git_from_a_parent_stage_or_a_full_python_image_counts(tmp_path: Path) -> None:
    dockerfile = """\
FROM python:3.11-slim AS tools
RUN apt-get install -y git
FROM tools
RUN pip install git+https://github.com/huggingface/OpenEnv.git@v0.3.1
FROM python:3.11
RUN pip install git+https://github.com/huggingface/OpenEnv.git@v0.3.1
CMD ["python"]
"""
    make_tree(tmp_path, dockerfile)
    assert run("git-for-git-deps", tmp_path) == []


def test_git_lfs_is_not_git(tmp_path: Path) -> None:
    dockerfile = """\
FROM python:3.11-slim
RUN apt-get install -y git-lfs && pip install git+https://github.com/huggingface/OpenEnv.git@v1
CMD ["python"]
"""
    make_tree(tmp_path, dockerfile)
    assert only(run("git-for-git-deps", tmp_path)).line == 2


# -- copy-source-missing ------------------------------------------------------------------------


def test_copy_source_missing(tmp_path: Path) -> None:
    dockerfile = GOOD_DOCKERFILE.replace(
        "COPY . /app/env\n", "COPY . /app/env\nCOPY mcp_databases data/*.db /app/\n"
    )
    make_tree(tmp_path, dockerfile)
    findings = run("copy-source-missing", tmp_path)
    assert [(f.line, f.message) for f in findings] == [
        (4, "COPY source mcp_databases is not in the staged tree"),
        (4, "COPY source data/*.db is not in the staged tree"),
    ]
    make_tree(tmp_path, dockerfile, {"mcp_databases/seed.sql": "", "data/x.db": ""})
    assert run("copy-source-missing", tmp_path) == []


# -- cmd-json-form ------------------------------------------------------------------------------


def test_cmd_in_shell_form(tmp_path: Path) -> None:
    dockerfile = GOOD_DOCKERFILE.replace(
        'CMD ["sh", "-c", "cd /app/env && uvicorn server.app:app"]',
        "CMD cd /app/env && uvicorn server.app:app",
    )
    make_tree(tmp_path, dockerfile)
    finding = only(run("cmd-json-form", tmp_path))
    assert finding.line == 10
    assert finding.remedy == (
        'write it as CMD ["sh", "-c", "cd /app/env && uvicorn server.app:app"]'
    )


# -- from-unresolved ----------------------------------------------------------------------------


def test_from_with_a_variable(tmp_path: Path) -> None:
    dockerfile = "ARG OPENSPIEL_BASE_IMAGE=x\n" + GOOD_DOCKERFILE.replace(
        "FROM ghcr.io/huggingface/openenv-base:latest\n", "FROM ${OPENSPIEL_BASE_IMAGE}\n"
    )
    make_tree(tmp_path, dockerfile)
    finding = only(run("from-unresolved", tmp_path))
    assert finding.line == 8
    assert "FROM ${OPENSPIEL_BASE_IMAGE} holds a variable" in finding.message


# -- readme-metadata ----------------------------------------------------------------------------


def test_readme_metadata_the_hub_would_refuse(tmp_path: Path) -> None:
    make_tree(tmp_path, files={"README.md": README.replace("colorFrom: blue", "colorFrom: red2")})
    finding = only(run("readme-metadata", tmp_path))
    assert (finding.file, finding.line) == ("README.md", 4)
    assert "colorFrom" in finding.message
    (tmp_path / "README.md").write_text(README)
    assert run("readme-metadata", tmp_path) == []


def test_readme_missing(tmp_path: Path) -> None:
    make_tree(tmp_path).joinpath("README.md").unlink()
    assert only(run("readme-metadata", tmp_path)).message == "no README.md"


# -- openenv-pinned -----------------------------------------------------------------------------

FORMS = Path(__file__).parent / "edit" / "golden" / "dockerfile" / "openenv_forms"


def test_openenv_left_for_pypi_anywhere_the_build_reads_is_named(tmp_path: Path) -> None:
    dockerfile = FORMS.with_suffix(".Dockerfile").read_text()
    source = 'openenv = { git = "https://github.com/huggingface/OpenEnv.git", rev = "v0.1.0" }'
    files = {
        "requirements.txt": "fastapi\nopenenv-core>=0.2  # loose\n",
        "pyproject.toml": PYPROJECT + f"[tool.uv.sources]\n{source}\n",
        "environment.yml": "dependencies:\n  - pip:\n    - openenv-core==0.2.1\n",
    }
    findings = run("openenv-pinned", make_tree(tmp_path, dockerfile, files))
    where = sorted((f.file, f.line or 0) for f in findings)
    assert where == [
        *[("Dockerfile", line) for line in (3, 4, 5, *range(9, 16))],
        ("environment.yml", 0),
        ("pyproject.toml", 5),
        ("requirements.txt", 2),
    ]
    assert (
        "is pinned to v0.1.0, not v0.3.1"
        in next(f for f in findings if f.file == "pyproject.toml").message
    )
    # the staged rewrite of the same Dockerfile passes: the check proves the rewrite
    staged = FORMS.with_suffix(".expected.Dockerfile").read_text()
    assert run("openenv-pinned", make_tree(tmp_path / "staged", staged)) == []


def test_lfs_pointers_are_named_in_path_order_and_symlinks_are_not_read(tmp_path: Path) -> None:
    pointer = checks.LFS_POINTER + b"oid sha256:" + b"0" * 64 + b"\nsize 9\n"
    for rel in ("b/x.bin", "a-b/y.bin", "a/z.bin", "a/b/c.bin"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(pointer)
    (tmp_path / "link.bin").symlink_to(tmp_path / "a" / "z.bin")
    (tmp_path / "linked").symlink_to(tmp_path / "b", target_is_directory=True)
    found = [f.file for f in checks.check_lfs_pointers(tmp_path)]
    assert found == ["a/b/c.bin", "a/z.bin", "a-b/y.bin", "b/x.bin"]  # by parts, not by string


def test_outside_src_is_rglob_less_the_top_level_src(tmp_path: Path) -> None:
    from releaselib.stage.git_needs import outside_src

    for rel in ("requirements.txt", "src/requirements.txt", "envs/src/requirements-dev.txt",
                "a/b/requirements.txt", "src/x/requirements.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    (tmp_path / "link").symlink_to(tmp_path / "a", target_is_directory=True)
    rglob = sorted(tmp_path.rglob("requirements*.txt"))
    expected = [p for p in rglob if p.relative_to(tmp_path).parts[0] != "src"]
    assert outside_src(tmp_path, "requirements*.txt") == expected
    assert len(expected) == 3
