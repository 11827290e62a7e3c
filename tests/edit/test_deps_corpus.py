"""OpenEnv dependency pinning over the real files of the OpenEnv snapshot (34 envs)."""

from __future__ import annotations

from pathlib import Path

import dockerfile
import pytest

from releaselib.edit.pyproject_deps import find_openenv_requirements, rewrite_pyproject
from releaselib.edit.requirement import pinned_requirement
from releaselib.edit.requirements_txt import rewrite_requirements_txt
from releaselib.edit.run_pins import rewrite_shell_command

SNAPSHOT = Path(__file__).resolve().parents[3] / "shared" / "openenv-snapshot"
REF = "v0.3.1"
PINNED = pinned_requirement("openenv", REF)
# From the survey's Table 1: the only Dockerfiles that install OpenEnv themselves (line, spec).
DIRECT_INSTALLS = {
    "carla_env": [(92, "git+https://github.com/huggingface/OpenEnv.git")],
    "coding_env": [(20, "openenv[core]>=0.2.2")],
    "openapp_env": [(86, "openenv[core]>=0.2.2")],
}

pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(
        not (SNAPSHOT / "envs").is_dir(),
        reason=f"OpenEnv snapshot not found at {SNAPSHOT}/envs (the shared fixture checkout)",
    ),
]


def pyprojects() -> list[Path]:
    if not (SNAPSHOT / "envs").is_dir():
        return []
    return [SNAPSHOT / "pyproject.toml", *sorted(SNAPSHOT.glob("envs/*/pyproject.toml"))]


def dockerfiles() -> list[Path]:
    if not (SNAPSHOT / "envs").is_dir():
        return []
    return sorted([*SNAPSHOT.glob("envs/*/Dockerfile"), *SNAPSHOT.glob("envs/*/server/Dockerfile")])


def label(path: Path) -> str:
    return str(path.relative_to(SNAPSHOT))


@pytest.mark.parametrize("path", pyprojects(), ids=label)
def test_every_openenv_dependency_is_pinned(path: Path) -> None:
    text = path.read_text()
    new, changes = rewrite_pyproject(text, path=label(path), dist="openenv", ref=REF)
    before = find_openenv_requirements(text)
    if not before:
        assert (new, changes) == (text, [])
        return
    assert find_openenv_requirements(new) == [PINNED] * len(before)
    assert len(changes) >= len(before)
    assert "../../" not in new
    comments = [line for line in text.splitlines() if line.lstrip().startswith("#")]
    assert comments == [line for line in new.splitlines() if line.lstrip().startswith("#")]


def test_only_openapp_and_the_root_have_no_openenv_dependency() -> None:
    unchanged = {
        path.parent.name for path in pyprojects() if not find_openenv_requirements(path.read_text())
    }
    assert unchanged == {"openapp_env", "openenv-snapshot"}


def test_calendar_requirements_txt_is_pinned() -> None:
    path = SNAPSHOT / "envs/calendar_env/requirements.txt"
    text = path.read_text()
    new, changes = rewrite_requirements_txt(text, path=label(path), dist="openenv", ref=REF)
    assert [(c.before, c.after) for c in changes] == [("openenv>=0.2.0", PINNED)]
    assert new == text.replace("openenv>=0.2.0", PINNED)


@pytest.mark.parametrize("path", dockerfiles(), ids=label)
def test_dockerfile_run_lines_pin_direct_installs(path: Path) -> None:
    lines = path.read_text().splitlines(keepends=True)
    pinned = []
    for instruction in dockerfile.parse_file(str(path)):
        if instruction.cmd.upper() != "RUN":
            continue
        raw = "".join(lines[instruction.start_line - 1 : instruction.end_line])
        new, changes = rewrite_shell_command(
            raw, path=label(path), line=instruction.start_line, dist="openenv", ref=REF
        )
        assert new.count("\n") == raw.count("\n")
        assert rewrite_shell_command(new, path="", line=1, dist="openenv", ref=REF)[1] == []
        pinned += [(c.line, c.before) for c in changes]
    env = path.relative_to(SNAPSHOT / "envs").parts[0]
    assert pinned == DIRECT_INSTALLS.get(env, [])
