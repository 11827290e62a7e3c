"""The files every staged tree of a run holds alike (OpenEnv's ``src/``), staged once and
hard-linked into each tree, since creating a file costs the kernel far more than a link.

The one copy lives in a pool folder beside the staged trees (``.openenv-release-tmp.pool.*``),
locked while its run lives, removed when the run ends, and by a later run if this one was
killed. Staging's writers replace the files they change, and a tree a plugin fix edits gets
copies of its own, so a link is not written through. A linked file that still changed in place
while its tree was staged (a plugin check that wrote) is caught by ``written_through``: the
trees staged before that still link it get its content as pooled back, and the pool starts
afresh. Where the file system refuses the pool's lock, the run copies instead.
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
    its content and that content's git blob sha1."""

    source: Path
    size: int
    mtime_ns: int
    path: Path
    data: bytes
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
        self._copies_only = False

    def place(self, source: Path, target: str) -> Pooled | None:
        """Put ``source`` at ``target``; the pooled copy it links to, else None (a copy)."""
        if self._copies_only:
            shutil.copyfile(source, target)
            return None
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

    def written_through(self, linked: dict[str, Pooled]) -> list[str]:
        """The linked files of a tree whose pooled copy no longer holds what was pooled (the
        write reached every link). When there are any, each installed tree still linking one
        gets the pooled content back, and the pool starts afresh."""
        sums: dict[Path, str] = {}
        for pooled in linked.values():
            if pooled.path not in sums:
                try:
                    sums[pooled.path] = git_blob_sha1(pooled.path.read_bytes())
                except OSError:
                    sums[pooled.path] = ""
        changed = sorted(rel for rel, pooled in linked.items() if sums[pooled.path] != pooled.sha1)
        for pooled in {linked[rel].path: linked[rel] for rel in changed}.values():
            for user in self._users.pop(pooled.path, []):
                restore(pooled, user, self._pool_dir())
        if changed:
            self._pooled.clear()
        return changed

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
        pooled = Pooled(source, stat.st_size, stat.st_mtime_ns, path, data, git_blob_sha1(data))
        self._pooled[str(source)] = pooled
        return pooled

    def _pool_dir(self) -> Path:
        if self._pool is None:
            remove_stale_pools(self._folder)
            pool = Path(tempfile.mkdtemp(prefix=POOL_PREFIX, dir=self._folder))
            lock = os.open(pool / LOCK_NAME, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                fcntl.flock(lock, fcntl.LOCK_EX)  # held while this run lives
            except OSError:  # no locks here (some network file systems): copy instead
                _remove_pool(pool, lock)
                self._copies_only = True
                raise
            weakref.finalize(self, _remove_pool, pool, lock)
            self._pool = pool
        return self._pool


def restore(pooled: Pooled, user: Path, pool: Path) -> None:
    """Give ``user``, if it still is a link to ``pooled`` (a tree staged before the write), a
    file of its own with the content pooled; the new file is made in the pool, so a failure
    leaves nothing in the tree."""
    try:
        if user.stat().st_ino != pooled.path.stat().st_ino:
            return  # replaced since (a later staging of its env): not ours to touch
        fd, tmp = tempfile.mkstemp(dir=pool)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(pooled.data)
        os.chmod(tmp, pooled.path.stat().st_mode & 0o777)
        os.replace(tmp, user)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


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
