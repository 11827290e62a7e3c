"""Every staged Dockerfile of the 34 real envs has git before every git+ install.

The reading here is the test's own (not releaselib.edit.gitdeps): a RUN needs git when its
text holds a git+ URL, when a requirements file it names with -r/-c (found by name in the
staged tree, nested -r/-c followed) holds one, or when it installs the env's project (uv sync,
pip install ., -e ., ./envs/<env>) and the staged pyproject holds one.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import dockerfile
import pytest

from tests import test_stage_corpus

pytestmark = pytest.mark.corpus
corpus = test_stage_corpus.staged  # (config, results, digest before, digest after)

GIT_URL = re.compile(r"git\+https?://")
GIT_INSTALL = re.compile(r"\b(?:apt-get|apk)\b[^;&|]*\b(?:install|add)\b[^;&|]*\sgit(?:\s|$)")
INCLUDE = re.compile(r"(?:^|\s)(?:-r|-c|--requirement|--constraint)(?:\s+|=)?(\S+)")
PROJECT = re.compile(r"\buv\s+sync\b|\bpip3?\s+install\b[^;&|]*\s(?:-e\s+)?\.?\.?/?(?:\.|envs/)")


@pytest.fixture(scope="module")
def staged(corpus):
    """The 34 real envs staged (test_stage_corpus's fixture, staged once for this module)."""
    return corpus[1]


def uncommented(path: Path) -> str:
    return "\n".join(
        re.split(r"(?:^|\s)#", line, maxsplit=1)[0] for line in path.read_text().splitlines()
    )


def requirements_need_git(tree: Path, name: str, seen: set[str]) -> bool:
    """True if a staged requirements file called ``name`` (or one it includes) has a git+ URL."""
    base = Path(name).name
    if base in seen:
        return False
    seen.add(base)
    for path in tree.rglob(base):
        if path.relative_to(tree).parts[0] == "src" or not path.is_file():
            continue
        text = uncommented(path)
        if GIT_URL.search(text) or any(
            requirements_need_git(tree, inc, seen) for inc in INCLUDE.findall(text)
        ):
            return True
    return False


def needs_git(tree: Path, run: str) -> bool:
    if GIT_URL.search(run):
        return True
    if any(requirements_need_git(tree, name.strip("\"'"), set()) for name in INCLUDE.findall(run)):
        return True
    return bool(PROJECT.search(run)) and bool(GIT_URL.search(uncommented(tree / "pyproject.toml")))


def stages(commands):
    """(name, base, RUN texts) per stage."""
    out = []
    for command in commands:
        if command.cmd.upper() == "FROM":
            words = command.value
            name = words[2].lower() if len(words) >= 3 and words[1].upper() == "AS" else None
            out.append((name, words[0].lower(), []))
        elif command.cmd.upper() == "RUN" and out:
            out[-1][2].append(" ".join(command.value))
    return out


def unmet_git(tree: Path) -> list[str]:
    """The RUNs that install a git+ requirement without git before them in their stage."""
    found = []
    had_git: dict[str, bool] = {}
    for index, (name, base, runs) in enumerate(
        stages(dockerfile.parse_file(str(tree / "Dockerfile")))
    ):
        has_git = had_git.get(base, False)
        for run in runs:
            if GIT_INSTALL.search(run):
                has_git = True
            elif needs_git(tree, run) and not has_git:
                found.append(f"stage {name or index}: {shlex.split(run)[:6]}")
        had_git[name or str(index)] = has_git
    return found


def test_every_staged_dockerfile_has_git_before_every_git_install(staged) -> None:
    assert len(staged) == 34
    assert {r.env: unmet_git(r.staged_dir) for r in staged if unmet_git(r.staged_dir)} == {}
    assert all("git-for-git-deps:ok" in r.checks for r in staged)


def test_calendar_env_installs_git_before_its_requirements(staged) -> None:
    calendar = next(r for r in staged if r.env == "calendar_env")
    text = (calendar.staged_dir / "Dockerfile").read_text()
    assert (
        "git+https://github.com/huggingface/OpenEnv.git@"
        in (calendar.staged_dir / "requirements.txt").read_text()
    )
    assert text.index("apt-get install -y --no-install-recommends git") < text.index(
        "pip install --no-cache-dir -r requirements.txt"
    )
    recorded = [c for c in calendar.changes if c.file == "Dockerfile" and "no git" in c.why]
    assert len(recorded) == 1 and "requirements.txt" in recorded[0].why
