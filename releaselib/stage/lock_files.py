"""An env's own lock files against the rewritten requirements.

- ``uv.lock`` (left out of the staged tree by ``sources``): re-locked with ``uv lock`` in the
  staged project that a ``uv sync`` of the build installs, starting from the env's own file, so
  the versions its author locked stay wherever the rewritten requirements allow. The OpenEnv
  git requirement resolves from the checkout (git's ``url.<checkout>.insteadOf`` for the
  release's OpenEnv URL, through ``GIT_CONFIG_*``; uv's GitHub API fast path off), so the lock
  records the original URL at the commit the checkout holds for the ref. The build then syncs
  it with ``UV_FROZEN=1``.
- ``poetry.lock`` beside a pyproject staging rewrote: the release does not run poetry, so the
  env fails naming the file.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import uv

from releaselib.config import OPENENV_GIT_URL
from releaselib.dockerfile_syntax.parse import Instruction
from releaselib.dockerfile_syntax.words import key_values
from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.edit.git_packages import shell_text
from releaselib.errors import StageError
from releaselib.records import Change
from releaselib.shell import Runner

RELOCK_TIMEOUT = 300.0


def check_poetry_locks(stage_dir: Path, changes: Sequence[Change], env: str) -> None:
    """StageError naming a ``poetry.lock`` whose pyproject staging rewrote: it no longer
    matches, and ``poetry install`` would refuse it or install the old OpenEnv."""
    rewritten = {c.file for c in changes if c.file.endswith("pyproject.toml")}
    for name in sorted(rewritten):
        lock = (stage_dir / name).parent / "poetry.lock"
        if lock.is_file():
            rel = lock.relative_to(stage_dir).as_posix()
            rel = rel if rel.startswith(f"envs/{env}/") else f"envs/{env}/{rel}"
            raise StageError(
                f"{rel}: locks the pyproject.toml beside it, which staging rewrote (OpenEnv "
                "pinned to the release), and the release does not run poetry to re-lock it",
                remedy=f"run `poetry lock` after pinning, or delete {rel} and let the release "
                "lock the env",
            )


def uv_lock_reader(df: Dockerfile) -> Instruction | None:
    """The first instruction that makes the build read a uv.lock (``uv_lock_readers``)."""
    return next(uv_lock_readers(df), None)


def uv_lock_readers(df: Dockerfile) -> Iterator[Instruction]:
    """The instructions that make the build read a uv.lock: ``ENV UV_FROZEN``/``UV_LOCKED``
    when a RUN runs a uv project command (``uv sync``, ``uv run``...; ``uv pip`` reads no
    lock), a RUN of ``uv ... --locked``/``--frozen``, or a RUN that bind-mounts ``uv.lock``."""
    syncs = any(instr.cmd == "RUN" and _runs_uv_project(instr) for instr in df.instructions)
    for instr in df.instructions:
        if (
            syncs
            and instr.cmd == "ENV"
            and {"UV_FROZEN", "UV_LOCKED"} & {k for k, _ in key_values(instr)}
        ):
            yield instr
        if instr.cmd == "RUN" and (
            re.search(r"\buv\b[^;&|]*\s--(?:locked|frozen)\b", instr.text)
            or any(re.search(r"source=(?:\./)?uv\.lock\b", f) for f in instr.flags)
        ):
            yield instr


def _runs_uv_project(instr: Instruction) -> bool:
    """True if the RUN runs a uv command that reads a project's uv.lock (not ``uv pip``)."""
    return _UV_PROJECT.search(shell_text(instr)) is not None


_UV_PROJECT = re.compile(r"(?:^|[\s;&|(])uv\s+(?:--?[\w-]+(?:=\S+)?\s+)*(?:sync|run|lock|export)\b")


def check_unused_uv_lock(stage_dir: Path, env: str, why: str, remedy: str) -> None:
    """StageError when the build reads a uv.lock that staging leaves out (``why``)."""
    df = Dockerfile.parse((stage_dir / "Dockerfile").read_text(encoding="utf-8"), "Dockerfile")
    instr = uv_lock_reader(df)
    if instr is not None:
        raise StageError(
            f"envs/{env}/uv.lock: the Dockerfile reads it (line {instr.start_line}: "
            f"{short_line(instr.text, 80)}), but {why}",
            remedy=remedy,
        )


def check_missing_uv_lock(dockerfile: Path, path: str) -> None:
    """StageError naming ``path:line`` when the build reads a uv.lock (``uv_lock_reader``) and
    the env has none: ``uv sync`` cannot work frozen or locked without one."""
    df = Dockerfile.parse(dockerfile.read_text(encoding="utf-8"), path)
    for instr in uv_lock_readers(df):
        if instr.cmd == "RUN" and re.search(r"-[ef]\s+\S*uv\.lock\b", instr.text):
            continue  # only when the file is there: ``if [ -f uv.lock ]; then uv sync --frozen``
        raise StageError(
            f"{path}:{instr.start_line}: {short_line(instr.text, 80)} makes uv read a uv.lock, "
            "and the env has none, so the build cannot work",
            remedy="commit the env's uv.lock (run `uv lock` in it), or drop the frozen/locked "
            "setting",
        )


def uv_project_command(repo: Path, *args: str) -> list[str]:
    """``uv <args>`` with the release's OpenEnv URL read from the checkout ``repo``."""
    git = [
        f"GIT_CONFIG_KEY_0=url.{repo.resolve()}.insteadOf",
        f"GIT_CONFIG_VALUE_0={OPENENV_GIT_URL}",
    ]
    # UV_NO_GITHUB_FAST_PATH: else uv asks GitHub's API for the branch's commit, not the checkout
    env = ["env", "GIT_CONFIG_COUNT=1", *git, "UV_NO_GITHUB_FAST_PATH=1", "NO_COLOR=1"]
    env.append("UV_PYTHON_DOWNLOADS=never")
    return [*env, uv.find_uv_bin(), *args]


def relock_uv(project: Path, *, repo: Path, runner: Runner, env: str) -> None:
    """Re-lock the staged ``project``'s uv.lock in place; StageError naming the env's file
    when uv cannot (the file is then removed: never a half-right lock)."""
    done = runner(uv_project_command(repo, "lock", "--quiet"), cwd=project, timeout=RELOCK_TIMEOUT)
    if not done.ok:
        (project / "uv.lock").unlink(missing_ok=True)
        raise StageError(
            f"envs/{env}/uv.lock: cannot be re-locked against the rewritten requirements "
            f"({uv_error(done.stderr, done.returncode)})",
            remedy="run `uv lock` in the env after pinning OpenEnv to the release, or delete "
            "its uv.lock",
        )


def exported_pins(project: Path, excluded: Sequence[str], *, repo: Path, runner: Runner) -> str:
    """The re-locked uv.lock as constraint lines (name==version; markers kept), without the
    project, ``excluded`` names and direct URL requirements."""
    args = [
        "export",
        "--frozen",
        "--no-hashes",
        "--no-header",
        "--no-annotate",
        "--no-emit-project",
    ]
    args += [arg for name in excluded for arg in ("--no-emit-package", name)]
    done = runner(uv_project_command(repo, *args), cwd=project, timeout=RELOCK_TIMEOUT)
    if not done.ok:
        raise StageError(
            f"{project.name}/uv.lock: re-locked, but uv export failed "
            f"({uv_error(done.stderr, done.returncode)})",
            remedy="rerun; if it persists, report it with the env's uv.lock",
        )
    lines = done.stdout.splitlines()
    return "".join(f"{line}\n" for line in lines if "==" in line and " @ " not in line)


def stage_uv_lock(source: Path, project: Path, stage_dir: Path) -> Change:
    """Put the env's ``source`` uv.lock into the staged ``project``; the change."""
    shutil.copyfile(source, project / "uv.lock")
    rel = (project / "uv.lock").relative_to(stage_dir).as_posix()
    why = "the env's uv.lock, re-locked against the rewritten requirements (OpenEnv at the ref)"
    return Change(rel, None, "", "uv.lock (re-locked; the build syncs it frozen)", why)


def uv_error(stderr: str, code: int) -> str:
    """uv's explanation in one line: what follows its "No solution found" heading, up to its
    hints, joined whether uv wrapped it at the terminal's width or listed it ("Because all
    of:")."""
    lines = [line.strip(" \u00d7\u2570\u2500\u25b6\u2502") for line in stderr.splitlines()]
    lines = [line.removeprefix("error: ").removeprefix("cause: ") for line in lines if line]
    useful = [line for line in lines if not line.startswith("No solution found")]
    hint = next((i for i, line in enumerate(useful) if line.startswith("hint:")), len(useful))
    text = " ".join(useful[:hint])
    return short_line(text or (lines or [f"uv exit {code}"])[0], 200)


def short_line(text: str, limit: int = 120) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
