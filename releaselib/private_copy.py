"""A private copy of an OpenEnv checkout for a rehearsal: what git tracks there, committed in a
repository of its own, so a release (and its pins) never writes to the real checkout.

The copy's repository borrows the checkout's objects (git's alternates, nothing copied): a
clean checkout's copy has the checkout's own HEAD commit, so a rehearsal pins what the checkout
holds; uncommitted changes become one commit on top of that HEAD. A checkout whose history
lacks objects (git could not serve its HEAD) gets a copy of one fresh commit instead.

Only tracked files are copied, with the work tree's content (a modified file as it is now, a
deleted one left out); untracked files (a token may live there), submodules and ``.git`` never
are. A tracked symlink stays a symlink, never followed, so that staging the copy fails an env
exactly where staging the checkout would: one resolving inside the checkout points at the same
place in the copy (an untracked file or folder there gets an empty untracked stand-in, so the
link is still "to a file git does not track"); one leading out of it points where the
original resolves (its target text made absolute).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from releaselib.errors import ReleaseError, UsageError
from releaselib.shell import run
from releaselib.stage.discover import is_openenv_checkout
from releaselib.stage.gitfiles import list_files
from releaselib.stage.secretscan import Scanner

#: Identity and settings of the copy's one commit: no user hook, signing or LFS filter runs.
_GIT = [
    "git",
    "-c",
    "user.name=rehearsal",
    "-c",
    "user.email=rehearsal@localhost",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "filter.lfs.required=false",
]


def commit_all(dest: Path, message: str, *, force: bool = False) -> None:
    """Make ``dest`` a new git repository whose one commit on ``main`` holds every file in it
    (``force``: also those its .gitignore names)."""
    add = ["add", "-A", *(["-f"] if force else [])]
    for args in (["init", "-q", "-b", "main"], add, ["commit", "-q", "--no-verify", "-m", message]):
        _git(dest, *args)


def _git(dest: Path, *args: str) -> str:
    """``git args`` in ``dest`` as the copy's git runs it; its stdout, or a ReleaseError."""
    done = run([*_GIT, *args], cwd=dest, timeout=600)
    if not done.ok:
        raise ReleaseError(
            f"{dest}: git {args[0]} failed: {done.stderr.strip()[:200]}",
            remedy="check that git works here (`git --version`), then rerun",
        )
    return done.stdout.strip()


def servable_head(source: Path) -> tuple[str, Path] | None:
    """The checkout's HEAD commit and its object folder, when every object HEAD's history needs
    is there (git can serve it to an installer); else None."""
    head = run(["git", "rev-parse", "--verify", "HEAD^{commit}"], cwd=source)
    where = ["git", "rev-parse", "--path-format=absolute", "--git-path", "objects"]
    objects = run(where, cwd=source)
    if not head.ok or not objects.ok:
        return None
    walk = run(["git", "rev-list", "--objects", "--missing=print", "HEAD"], cwd=source, timeout=600)
    if not walk.ok or any(line.startswith("?") for line in walk.stdout.splitlines()):
        return None
    return head.stdout.strip(), Path(objects.stdout.strip())


def commit_on_head(dest: Path, head: str, objects: Path, message: str) -> None:
    """Make ``dest`` a git repository whose ``main`` is ``head`` (its objects borrowed from
    ``objects``), plus one commit of whatever in ``dest`` differs from it."""
    _git(dest, "init", "-q", "-b", "main")
    (dest / ".git" / "objects" / "info" / "alternates").write_text(f"{objects}\n")
    _git(dest, "update-ref", "refs/heads/main", head)
    _git(dest, "read-tree", head)
    _git(dest, "add", "-A", "-f")
    if run([*_GIT, "diff", "--cached", "--quiet", head], cwd=dest).returncode == 1:
        _git(dest, "commit", "-q", "--no-verify", "-m", message)


def pin_reason(source: Path, copy: Path) -> str:
    """Why a rehearsal of ``source`` pins its private ``copy``'s HEAD: the checkout's own HEAD,
    or what the copy's commit holds beyond it."""
    mine = _git(copy, "rev-parse", "HEAD")
    theirs = run(["git", "rev-parse", "--verify", "HEAD^{commit}"], cwd=source).stdout.strip()
    if mine == theirs:
        return "the rehearsed checkout's HEAD"
    parent = run([*_GIT, "rev-parse", "--verify", "HEAD~1"], cwd=copy).stdout.strip()
    if theirs and parent == theirs:
        return (
            f"the private copy's commit {mine[:12]}: {source}'s HEAD {theirs[:12]} plus your "
            "uncommitted changes"
        )
    return (
        f"the private copy's commit {mine[:12]}: {source}'s work tree as one fresh commit "
        f"(its HEAD {theirs[:12] or 'none'} lacks objects git would need to serve it)"
    )


def check_source(source: Path) -> None:
    """UsageError (exit 2) unless ``source`` is an OpenEnv checkout (envs/ and pyproject.toml)."""
    if not is_openenv_checkout(source):
        raise UsageError(
            f"--repo {source}: not an OpenEnv checkout (needs envs/ and pyproject.toml)",
            remedy="point --repo at the root of an OpenEnv clone",
        )


def private_copy(
    source: Path, dest: Path, on_event: Callable[[str], None] = lambda line: None
) -> Path:
    """Copy what git tracks in ``source`` to ``dest`` (which must not exist) and commit it there;
    each file left out for a reason other than being untracked is named through ``on_event``,
    a token in its name redacted as staging redacts it."""
    check_source(source)
    listing = list_files(source, ["."])
    if listing is None:
        raise UsageError(
            f"--repo {source}: not a git checkout; a rehearsal copies only what git tracks",
            remedy="point --repo at an OpenEnv clone (or `git init` and commit this one)",
        )
    if not listing.tracked:
        raise UsageError(
            f"--repo {source}: nothing git tracks in {source}; a rehearsal copies only that",
            remedy="point --repo at an OpenEnv clone (or `git add` and commit this one's files)",
        )
    scanner = Scanner()
    root = source.resolve()
    dest.mkdir(parents=True)
    links = []
    for rel in sorted(listing.tracked):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if (root / rel).is_symlink():
            os.symlink(link_in_copy(root, rel), target)
            links.append(rel)
        elif not (root / rel).is_file():
            on_event(f"not copied: {scanner.redact(rel)[0]} (no longer a file in the work tree)")
        else:
            try:
                shutil.copy2(root / rel, target, follow_symlinks=False)
            except OSError as exc:
                raise ReleaseError(
                    f"--repo {source}: cannot copy {scanner.redact(rel)[0]}: {exc.strerror}",
                    remedy="make the file readable, then rerun",
                ) from None
    for rel in sorted(listing.submodules):
        on_event(f"not copied: {scanner.redact(rel)[0]} (a submodule)")
        (dest / rel).mkdir(parents=True, exist_ok=True)  # as a clone leaves one: empty
    head = servable_head(source)
    if head is None:
        commit_all(dest, f"rehearsal copy of {source}", force=True)
    else:
        commit_on_head(dest, *head, f"rehearsal copy of {source}: its uncommitted changes")
    for rel in links:  # after the commit: the stand-ins stay untracked
        stand_in(root, rel, dest)
    return dest


def link_in_copy(root: Path, rel: str) -> str:
    """What the copy's ``rel`` links to: from its place in the copy, the relative way to where
    the symlink ``root/rel`` resolves when that is inside ``root``; else the absolute way to
    where it leads out (the same file, or the same dangling path, for staging to refuse)."""
    resolved = Path(os.path.realpath(root / rel))
    if resolved.is_relative_to(root):
        return os.path.relpath(resolved, (root / rel).parent)
    return os.path.join((root / rel).parent, os.readlink(root / rel))


def stand_in(root: Path, rel: str, dest: Path) -> None:
    """An empty file or folder in ``dest`` where the link ``rel`` resolves inside ``root`` to
    something the copy lacks (untracked), never with its content; nothing inside ``.git``."""
    resolved = Path(os.path.realpath(root / rel))
    if not resolved.is_relative_to(root) or resolved.is_relative_to(root / ".git"):
        return
    here = dest / resolved.relative_to(root)
    if os.path.lexists(here) or not resolved.exists():
        return
    if resolved.is_dir():
        here.mkdir(parents=True, exist_ok=True)
    else:
        here.parent.mkdir(parents=True, exist_ok=True)
        here.touch()
