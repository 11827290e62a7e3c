"""Pin failed envs below the release in the OpenEnv checkout, and lift pins of envs that pass.

This is the only step that writes to the checkout. It edits ``envs/<env>/pyproject.toml``
(and the env's requirements files) through tomlkit, so only the OpenEnv requirement strings
change; comments, quoting, layout and line endings stay byte for byte (``pin_files``; the
bounds themselves are ``pin_bounds``). Every OpenEnv
requirement (``openenv`` or ``openenv-core``, any extras, markers kept as written) in
``project.dependencies``, each optional-dependencies list and each dependency group is
rewritten. Decisions:

- Pinning adds ``<V`` (V normalised by packaging: ``v0.2.2`` -> ``0.2.2``); every clause stays
  (``>=0.2.0`` -> ``>=0.2.0,<0.2.2``; ``<0.3`` stays, so lifting gives it back). A requirement
  that already admits nothing at or above V is left alone: idempotent.
- When the env's own lower bound is at or above V (``>=V``, ``~=V``, ``==V``, ``>=0.2.3`` for
  V 0.2.2), ``<V`` would contradict what the env says it needs: pin refuses that env (PinError
  naming the file, line and clause) and writes nothing.
- Each requirement pin writes is recorded in ``[tool.openenv-release] pins`` (requirement, what
  it was, the release), a table tomlkit keeps. Staging recognises these pins (and replaces them
  with the release's ref like any spec), promote refuses a tree that still carries one
  (:func:`tool_written_pins`), and lifting removes the entries it lifts.
- A direct URL cannot carry a version bound. An OpenEnv git URL at no ref, ``main``/``master``
  or a version tag at or above V would install the failed release, so it becomes
  ``<name>[extras]<V`` from the index. A URL at a version tag below V, a commit sha, another
  branch, or another repository never upgrades by itself and is left as is.
- Lifting removes every ``<X`` clause that excludes V: the bounds a pin wrote for V or for an
  earlier release. A pin this tool recorded gets back the spec it replaced (``was``, URLs too);
  otherwise, when no lower bound remains, ``>=V`` is added, so the env names the release it
  passed with, as the checkout's envs do.
- Every file the env's build reads its requirement from is pinned: the pyproject and each
  ``requirements*.txt`` of the env (with its ``-r``/``-c`` includes), a requirements line marked
  with ``# openenv-release pin (was SPEC)``. A contradiction in any file refuses the env and
  writes no file.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from releaselib.errors import PinError, UsageError
from releaselib.files import write_atomic
from releaselib.publish.pin_bounds import release_version
from releaselib.publish.pin_files import (
    lift_pin,
    lift_requirements_txt,
    pin_below,
    pin_requirements_txt,
)
from releaselib.records import Change, check_env_name
from releaselib.shell import Runner
from releaselib.shell import run as default_run

Action = Literal["pin", "lift"]


@dataclass(frozen=True)
class PinResult:
    """What ``pin_env`` or ``lift_env_pin`` did to one env's pyproject."""

    env: str
    path: str
    action: Action
    changed: bool
    diff: str
    changes: tuple[Change, ...]
    paths: tuple[str, ...] = ()  # every file changed (the pyproject, requirements files)


def unified_diff(before: str, after: str, path: str) -> str:
    """A ``git apply``-able unified diff of one file, empty when nothing changed."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def pin_env(repo: Path, env: str, *, version: str) -> PinResult:
    """Pin ``env``'s OpenEnv dependency below ``version`` in the checkout at ``repo``."""
    return write_edit(plan_edit(repo, env, "pin", version))


def lift_env_pin(repo: Path, env: str, *, version: str) -> PinResult:
    """Lift the pins that keep ``env`` below ``version`` in the checkout at ``repo``."""
    return write_edit(plan_edit(repo, env, "lift", version))


def commit_message(results: Sequence[PinResult], *, version: str) -> str:
    """The commit message: a subject, then the pinned and the lifted envs."""
    pinned = sorted(r.env for r in results if r.changed and r.action == "pin")
    lifted = sorted(r.env for r in results if r.changed and r.action == "lift")
    parts = [f"pin {len(pinned)} env(s) below {version}"] if pinned else []
    parts += [f"lift the pins of {len(lifted)} env(s) passing {version}"] if lifted else []
    body = [f"Pinned below {version} (failed): {', '.join(pinned)}"] if pinned else []
    body += [f"Lifted (passed {version}): {', '.join(lifted)}"] if lifted else []
    subject = "; ".join(parts)
    return "\n\n".join([subject[:1].upper() + subject[1:], "\n".join(body)]) + "\n"


def refuse_uncommitted(
    repo: Path, edits: Sequence[EnvEdit], *, runner: Runner = default_run
) -> None:
    """A UsageError naming every file the edits would change that has changes of the user's
    git has not committed (staged or not, or untracked): ``pin --commit`` commits whole files,
    so it would sweep them into its commit. Run before anything is written; so is
    :func:`refuse_branchless`."""
    files = sorted({rel for edit in edits for rel in edit.changed_paths})
    if not files:
        return
    remedy = "run pin without --commit, or point --repo at a git checkout"
    args = ["status", "--porcelain", "-z", "--untracked-files=all", "--", *files]
    status = _git(runner, repo, args, remedy)
    refuse_branchless(repo, runner=runner)
    dirty = sorted({entry[3:] for entry in status.split("\0") if entry[2:3] == " "} & set(files))
    if dirty:
        raise UsageError(
            f"pin --commit: {', '.join(dirty)} in {repo} has changes of yours that are not "
            "committed; pin would commit them with its own, so nothing is written",
            remedy="commit or stash those changes first, or run pin without --commit and "
            "commit the pins yourself",
        )


#: what git leaves in its directory while an operation waits for the user (a commit of some
#: files only is refused then)
_UNFINISHED = {
    "MERGE_HEAD": "a merge",
    "CHERRY_PICK_HEAD": "a cherry-pick",
    "REVERT_HEAD": "a revert",
    "rebase-merge": "a rebase",
    "rebase-apply": "a rebase or am",
}


def refuse_branchless(repo: Path, *, runner: Runner = default_run) -> None:
    """A UsageError when ``pin --commit`` cannot make its commit on a branch: HEAD is detached
    (the commit would belong to no branch), or a merge, rebase, cherry-pick or revert is
    unfinished (git refuses a commit of some files only then)."""
    keep = "so nothing is written"
    if not runner(["git", "symbolic-ref", "-q", "HEAD"], cwd=repo).ok:
        raise UsageError(
            f"pin --commit: HEAD in {repo} is detached, so its commit would be on no branch; "
            f"{keep}",
            remedy="check out a branch first, or run pin without --commit",
        )
    for name, what in _UNFINISHED.items():
        found = _git(runner, repo, ["rev-parse", "--git-path", name], "check git works").strip()
        if (repo / found).exists():
            raise UsageError(
                f"pin --commit: {repo} is in the middle of {what}, when git cannot commit "
                f"some files only; {keep}",
                remedy=f"finish or abort {what} first, or run pin without --commit",
            )


def commit_pins(
    repo: Path, results: Sequence[PinResult], *, version: str, runner: Runner = default_run
) -> str | None:
    """Commit the files the pins changed in one commit on the current branch; return its sha.

    ``git commit --only -- FILES``: only those files go into the commit, whatever else the user
    has staged or changed, and the rest of the index stays as it was. None when nothing changed.
    """
    changed = [r for r in results if r.changed]
    if not changed:
        return None
    files = sorted({p for r in changed for p in r.paths or (r.path,)})
    by_hand = f"the pins are written; fix the repository and commit {' '.join(files)} by hand"
    message = commit_message(changed, version=version)
    _git(runner, repo, ["commit", "--only", "-m", message, "--", *files], by_hand)
    return _git(runner, repo, ["rev-parse", "HEAD"], "the commit is made; see git log").strip()


@dataclass(frozen=True)
class FileEdit:
    """One file's text before and after a pin or lift (``rel``: its path in the checkout)."""

    path: Path
    rel: str
    before: str
    after: str
    changes: tuple[Change, ...]


@dataclass(frozen=True)
class EnvEdit:
    """A pin or lift of one env, planned (every file checked) and not yet written."""

    env: str
    action: Action
    files: tuple[FileEdit, ...]

    @property
    def changed_paths(self) -> tuple[str, ...]:
        return tuple(f.rel for f in self.files if f.before != f.after)


def plan_edit(repo: Path, env: str, action: Action, version: str) -> EnvEdit:
    """Plan the rewrite of every file the env's build reads its OpenEnv requirement from: its
    pyproject and its ``requirements*.txt`` (with their ``-r``/``-c`` includes). Every file is
    checked here and none is written, so a refusal in one file writes nothing."""
    from releaselib.stage.git_needs import with_includes

    release_version(version)
    env_dir = repo / "envs" / check_env_name(env)
    pyproject = env_dir / "pyproject.toml"
    named = sorted(p for p in env_dir.rglob("requirements*.txt") if p.is_file())
    files = [f for f in dict.fromkeys(f for n in named for f in with_includes(n)) if f.is_file()]
    if not pyproject.is_file() and not files:
        raise PinError(
            f"{env}: {pyproject} not found, so there is no OpenEnv dependency to {action}",
            remedy="check the env name and that --repo points at the OpenEnv checkout",
        )
    edits: list[FileEdit] = []
    for file in ([pyproject] if pyproject.is_file() else []) + files:
        rel = file.relative_to(repo).as_posix()
        before = file.read_bytes().decode("utf-8")
        if file.suffix == ".toml":
            edit = pin_below if action == "pin" else lift_pin
        else:
            edit = pin_requirements_txt if action == "pin" else lift_requirements_txt
        after, changes = edit(before, version=version, path=rel)
        edits.append(FileEdit(file, rel, before, after, tuple(changes)))
    return EnvEdit(env, action, tuple(edits))


def write_edit(edit: EnvEdit) -> PinResult:
    """Write the files ``edit`` changes; what was done, with its diff."""
    files = edit.files
    for file in files:
        if file.before != file.after:
            write_atomic(file.path, file.after.encode("utf-8"))
    return PinResult(
        edit.env,
        files[0].rel,
        edit.action,
        bool(edit.changed_paths),
        "".join(unified_diff(f.before, f.after, f.rel) for f in files),
        tuple(c for f in files for c in f.changes),
        edit.changed_paths,
    )


def _git(runner: Runner, repo: Path, args: list[str], remedy: str) -> str:
    """Run one git command in ``repo``; PinError naming it and git's complaint if it fails."""
    done = runner(["git", *args], cwd=repo)
    if not done.ok:
        complaint = (done.stderr or done.stdout).strip().splitlines()
        reason = complaint[-1] if complaint else f"exit status {done.returncode}"
        raise PinError(f"git {args[0]} failed in {repo}: {reason}", remedy=remedy)
    return done.stdout
