"""What git tracks in a checkout: staging takes these files and nothing else.

One ``git ls-files`` call lists, for some folders of the checkout, the tracked files (with the
working tree's content), those with uncommitted changes (or hidden by a sparse checkout), the
submodules, and the untracked files that are not ignored; a second lists every tracked file of
the checkout, which a symlink may point at. A checkout outside any git work tree has no listing
(``None``): it is staged as it is.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from releaselib.errors import StageError
from releaselib.shell import Runner
from releaselib.shell import run as default_run


@dataclass(frozen=True)
class GitFiles:
    """Checkout-relative posix paths, as ``git ls-files`` lists them."""

    tracked: frozenset[str]
    modified: frozenset[str]
    untracked: frozenset[str]
    submodules: frozenset[str] = frozenset()
    everywhere: frozenset[str] = frozenset()  # every tracked file of the checkout

    def under(self, folder: str) -> GitFiles:
        """The part of the listing inside ``folder`` (checkout-relative, no trailing slash)."""
        prefix = folder.rstrip("/") + "/"

        def pick(paths: frozenset[str]) -> frozenset[str]:
            return frozenset(p for p in paths if p.startswith(prefix) or p == folder)

        return GitFiles(
            pick(self.tracked),
            pick(self.modified),
            pick(self.untracked),
            pick(self.submodules),
            self.everywhere,
        )


def on_disk(repo: Path, rel: str) -> bool:
    """True if ``rel`` exists in ``repo`` with every folder on its way a real folder: a file
    behind a symlinked folder (which git does not track) is not read through the link."""
    here = repo
    for part in rel.split("/")[:-1]:
        here = here / part
        if here.is_symlink() or not here.is_dir():
            return False
    return os.path.lexists(here / rel.rsplit("/", 1)[-1])


def list_files(repo: Path, paths: Sequence[str], runner: Runner = default_run) -> GitFiles | None:
    """The listing of ``paths`` (relative to ``repo``); None when ``repo`` is in no git work
    tree, or git is missing. A tracked file that is deleted, or hidden by a sparse checkout
    (skip-worktree), counts as modified; one missing on disk, or behind a symlinked folder, is
    not tracked but modified; a submodule is listed apart."""
    probe = runner(["git", "rev-parse", "--is-inside-work-tree"], cwd=repo)
    if not probe.ok or probe.stdout.strip() != "true":
        return None
    listed = runner(
        [
            "git",
            "ls-files",
            "-z",
            "-t",
            "--stage",
            "--cached",
            "--modified",
            "--others",
            "--exclude-standard",
            "--",
            *paths,
        ],
        cwd=repo,
    )
    everywhere = runner(["git", "ls-files", "-z", "--cached"], cwd=repo)
    if not listed.ok or not everywhere.ok:
        raise StageError(
            f"{repo}: git ls-files failed: {(listed.stderr or everywhere.stderr).strip()[:200]}",
            remedy="check that `git status` works in the checkout",
        )
    tracked: set[str] = set()
    modified: set[str] = set()
    untracked: set[str] = set()
    submodules: set[str] = set()
    for entry in filter(None, listed.stdout.split("\0")):
        tag, path = entry[0], entry[2:]
        if tag == "?":
            untracked.add(path)
            continue
        meta, path = path.split("\t", 1)
        if meta.startswith("160000 "):
            submodules.add(path)
        else:
            if tag in "CS":  # changed or deleted; hidden by a sparse checkout
                modified.add(path)
            if tag != "C":
                tracked.add(path)
    gone = {p for p in tracked if not on_disk(repo, p)}
    return GitFiles(
        frozenset(tracked - gone),
        frozenset(modified | gone),
        frozenset(untracked),
        frozenset(submodules),
        frozenset(filter(None, everywhere.stdout.split("\0"))),
    )
