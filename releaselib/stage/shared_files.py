"""The files every staged tree of a run holds alike (OpenEnv's ``src/``), staged once and
hard-linked into each tree, since creating a file costs the kernel far more than a link.

The one copy lives in a pool folder beside the staged trees (``.openenv-release-tmp.pool.*``),
removed when the run ends, and by the next run if this one was killed. Staging's rewrites
replace the files they change, and a tree a plugin fix edits gets copies of its own, so a link
is not written through; a file that still changed in place while its tree was staged (a plugin
check that wrote) is caught by ``changed``: its content no longer matches what was pooled.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

from releaselib.stage.staged_tree import TEMP_PREFIX, git_blob_sha1

POOL_PREFIX = f"{TEMP_PREFIX}pool."


@dataclass(frozen=True)
class Pooled:
    """One pooled copy: where it is, the checkout file's size and mtime it was copied at, and
    its content's git blob sha1."""

    path: Path
    size: int
    mtime_ns: int
    sha1: str


class SharedFiles:
    """The pool of one staging folder: ``place`` puts a checkout file in a tree as a link to its
    pooled copy (pooled on first use, again when the checkout file changed), or as a copy where
    the file system refuses a link."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._pool: Path | None = None
        self._pooled: dict[str, Pooled] = {}
        self._made: list[Path] = []

    def place(self, source: Path, target: str) -> str | None:
        """Put ``source`` at ``target``; the git blob sha1 it must keep when linked, else None."""
        try:
            pooled = self._pooled_copy(source)
            os.link(pooled.path, target)
        except OSError:
            shutil.copyfile(source, target)
            return None
        return pooled.sha1

    def reset(self) -> None:
        """Pool every file afresh from now on (a pooled copy was written through)."""
        self._pooled.clear()

    def _pooled_copy(self, source: Path) -> Pooled:
        stat = source.stat()
        known = self._pooled.get(str(source))
        if known is not None and (known.size, known.mtime_ns) == (stat.st_size, stat.st_mtime_ns):
            return known
        data = source.read_bytes()
        path = self._pool_dir() / str(len(self._made))
        self._made.append(path)
        with path.open("xb") as out:  # the mode a copy gets (mkstemp's 0600 would reach images)
            out.write(data)
        pooled = Pooled(path, stat.st_size, stat.st_mtime_ns, git_blob_sha1(data))
        self._pooled[str(source)] = pooled
        return pooled

    def _pool_dir(self) -> Path:
        if self._pool is None:
            for old in self._folder.glob(f"{POOL_PREFIX}*"):  # a killed run's
                if old.is_dir() and not old.is_symlink():
                    shutil.rmtree(old, ignore_errors=True)
            self._pool = Path(tempfile.mkdtemp(prefix=POOL_PREFIX, dir=self._folder))
            weakref.finalize(self, shutil.rmtree, self._pool, True)
        return self._pool


def changed(linked: dict[str, str], manifest: dict[str, tuple[str, int]]) -> list[str]:
    """The linked files (staged path -> pooled sha1) whose content in ``manifest`` differs."""
    return sorted(rel for rel, sha1 in linked.items() if manifest.get(rel, (sha1,))[0] != sha1)
