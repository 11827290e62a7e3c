"""The files every staged tree of a run holds alike (OpenEnv's ``src/``), staged once and
hard-linked into each tree, since creating a file costs the kernel far more than a link.

The one copy lives in a pool folder beside the staged trees (``.openenv-release-tmp.pool.*``),
locked while its run lives, removed when the run ends, and by a later run if this one was
killed. Staging's writers replace the files they change, and a tree a plugin fix edits gets
copies of its own, so a link is not written through. A linked file that still changed in place
while its tree was staged (a plugin check that wrote) is caught by ``written_through``: the
trees staged before get the file back from the checkout, and the pool starts afresh.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

from releaselib.stage.staged_tree import TEMP_PREFIX, git_blob_sha1

POOL_PREFIX = f"{TEMP_PREFIX}pool."
#: What follows POOL_PREFIX in a pool's name (``tempfile.mkdtemp``'s 8 characters).
POOL_TAIL = re.compile(r"[a-z0-9_]{8}")
LOCK_NAME = ".lock"


@dataclass(frozen=True)
class Pooled:
    """One pooled copy: the checkout file, its size and mtime when copied, where the copy is,
    and its content's git blob sha1."""

    source: Path
    size: int
    mtime_ns: int
    path: Path
    sha1: str


class SharedFiles:
    """The pool of one staging folder: ``place`` puts a checkout file in a tree as a link to its
    pooled copy (pooled on first use, again when the checkout file changed), or as a copy where
    the file system refuses a link."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._pool: Path | None = None
        self._pooled: dict[str, Pooled] = {}
        self._made = 0
        self._users: dict[Path, list[Path]] = {}  # pooled copy -> files of installed trees

    def place(self, source: Path, target: str) -> Pooled | None:
        """Put ``source`` at ``target``; the pooled copy it links to, else None (a copy)."""
        try:
            pooled = self._pooled_copy(source)
            os.link(pooled.path, target)
        except OSError:
            shutil.copyfile(source, target)
            return None
        return pooled

    def installed(self, tree: Path, linked: dict[str, Pooled]) -> None:
        """Remember that the installed ``tree`` links ``linked`` (staged path -> copy)."""
        for rel, pooled in linked.items():
            self._users.setdefault(pooled.path, []).append(tree / rel)

    def written_through(
        self, tree: Path, linked: dict[str, Pooled], manifest: dict[str, tuple[str, int]] | None
    ) -> list[str]:
        """The linked files of ``tree`` whose content is no longer what was pooled (read from
        ``manifest`` if given, else from the tree). When there are any, each installed tree
        linking one gets a copy from the checkout instead, and the pool starts afresh."""
        changed = []
        for rel, pooled in linked.items():
            if manifest is not None:
                sha1 = manifest.get(rel, (pooled.sha1,))[0]
            else:
                try:
                    sha1 = git_blob_sha1((tree / rel).read_bytes())
                except OSError:  # removed: the others keep theirs
                    continue
            if sha1 != pooled.sha1:
                changed.append(rel)
        for rel in changed:
            for user in self._users.pop(linked[rel].path, []):
                restore(linked[rel], user)
        if changed:
            self._pooled.clear()
        return sorted(changed)

    def _pooled_copy(self, source: Path) -> Pooled:
        stat = source.stat()
        known = self._pooled.get(str(source))
        if known is not None and (known.size, known.mtime_ns) == (stat.st_size, stat.st_mtime_ns):
            return known
        data = source.read_bytes()
        path = self._pool_dir() / str(self._made)
        self._made += 1
        with path.open("xb") as out:  # the mode a copy gets (mkstemp's 0600 would reach images)
            out.write(data)
        pooled = Pooled(source, stat.st_size, stat.st_mtime_ns, path, git_blob_sha1(data))
        self._pooled[str(source)] = pooled
        return pooled

    def _pool_dir(self) -> Path:
        if self._pool is None:
            remove_stale_pools(self._folder)
            pool = Path(tempfile.mkdtemp(prefix=POOL_PREFIX, dir=self._folder))
            lock = os.open(pool / LOCK_NAME, os.O_WRONLY | os.O_CREAT, 0o600)
            fcntl.flock(lock, fcntl.LOCK_EX)  # held while this run lives
            weakref.finalize(self, _remove_pool, pool, lock)
            self._pool = pool
        return self._pool


def restore(pooled: Pooled, user: Path) -> None:
    """Give ``user`` (a link to ``pooled`` that was written through) a copy of its checkout
    file, if that still holds what was pooled; else leave it (its tree's manifest tells)."""
    try:
        data = pooled.source.read_bytes()
        if git_blob_sha1(data) != pooled.sha1:
            return
        fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=user.parent)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, pooled.path.stat().st_mode & 0o777)
        os.replace(tmp, user)
    except OSError:
        return


def remove_stale_pools(folder: Path) -> None:
    """Remove the pools in ``folder`` that no living run holds (a killed run's); only folders
    named as this tool names them."""
    for entry in folder.iterdir():
        name = entry.name
        if not name.startswith(POOL_PREFIX) or not POOL_TAIL.fullmatch(name[len(POOL_PREFIX) :]):
            continue
        if entry.is_symlink() or not entry.is_dir():
            continue
        try:
            lock = os.open(entry / LOCK_NAME, os.O_WRONLY)
        except FileNotFoundError:
            shutil.rmtree(entry, ignore_errors=True)  # killed before it took its lock
            continue
        except OSError:
            continue
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # a living run's
        finally:
            os.close(lock)
        shutil.rmtree(entry, ignore_errors=True)


def _remove_pool(pool: Path, lock: int) -> None:
    shutil.rmtree(pool, ignore_errors=True)
    os.close(lock)
