"""What git tracks in a checkout: staging takes these files and nothing else.

One ``git ls-files`` call lists, for some folders of the checkout, the tracked files (with the
working tree's content), those with uncommitted changes, and the untracked files that are not
ignored. A checkout outside any git work tree has no listing (``None``): it is staged as it is.
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

    def under(self, folder: str) -> GitFiles:
        """The part of the listing inside ``folder`` (checkout-relative, no trailing slash)."""
        prefix = folder.rstrip("/") + "/"

        def pick(paths: frozenset[str]) -> frozenset[str]:
            return frozenset(p for p in paths if p.startswith(prefix) or p == folder)

        return GitFiles(pick(self.tracked), pick(self.modified), pick(self.untracked))


def list_files(repo: Path, paths: Sequence[str], runner: Runner = default_run) -> GitFiles | None:
    """The listing of ``paths`` (relative to ``repo``); None when ``repo`` is in no git work
    tree, or git is missing. A deleted tracked file counts as modified, not as tracked."""
    probe = runner(["git", "rev-parse", "--is-inside-work-tree"], cwd=repo)
    if not probe.ok or probe.stdout.strip() != "true":
        return None
    listed = runner(
        [
            "git",
            "ls-files",
            "-z",
            "-t",
            "--cached",
            "--modified",
            "--others",
            "--exclude-standard",
            "--",
            *paths,
        ],
        cwd=repo,
    )
    if not listed.ok:
        raise StageError(
            f"{repo}: git ls-files failed: {listed.stderr.strip()[:200]}",
            remedy="check that `git status` works in the checkout",
        )
    tracked: set[str] = set()
    modified: set[str] = set()
    untracked: set[str] = set()
    for entry in filter(None, listed.stdout.split("\0")):
        tag, path = entry[0], entry[2:]
        {"?": untracked, "C": modified}.get(tag, tracked).add(path)
    gone = {p for p in tracked if not os.path.lexists(repo / p)}
    return GitFiles(frozenset(tracked - gone), frozenset(modified), frozenset(untracked))
