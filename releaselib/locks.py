"""Locks that keep two runs off one staging dir and one ledger (the ``filelock`` package).

The holder writes its pid into ``<lock>.pid`` beside the lock, so a run that finds the lock
taken can name who holds it. A ledger's lock is ``<ledger>.lock``: stage, deploy and release hold
it for the whole run, and every ledger write of any other task holds it while it writes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from releaselib.errors import ReleaseError, UsageError

LOCK_NAME = ".openenv-release.lock"
#: The locks this process holds (a second FileLock on one path would wait for itself).
_HELD: set[Path] = set()


@contextmanager
def held(
    lock_path: Path, what: str, *, wait: bool, on_wait: Callable[[str], None]
) -> Iterator[None]:
    """Hold the lock at ``lock_path``; wait for it (telling ``on_wait`` who holds it), or
    with ``wait=False`` raise ReleaseError naming the holder's pid."""
    pid_file = lock_path.with_name(lock_path.name + ".pid")
    lock = FileLock(lock_path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        holder = holder_pid(pid_file)
        if not wait:
            raise ReleaseError(
                f"{what} is in use by another openenv-release run (pid {holder}, lock {lock_path})",
                remedy="wait for it to finish, or run without --no-wait to queue behind it",
            ) from None
        on_wait(f"waiting for pid {holder}, which holds {what}")
        lock.acquire()
    except OSError as exc:
        raise UsageError(
            f"{lock_path}: cannot take the lock ({exc.strerror or exc})",
            remedy="pass a --staging-dir or --ledger you can write to",
        ) from exc
    try:
        pid_file.write_text(f"{os.getpid()}\n")
        _HELD.add(lock_path.absolute())
        yield
    finally:
        _HELD.discard(lock_path.absolute())
        pid_file.unlink(missing_ok=True)
        lock.release()


def holder_pid(pid_file: Path) -> str:
    try:
        return pid_file.read_text().strip() or "unknown"
    except OSError:
        return "unknown"


@contextmanager
def run_locks(
    staging: Path, ledger: Path | None, *, wait: bool, on_wait: Callable[[str], None]
) -> Iterator[None]:
    """The staging dir's lock, then the ledger's (the staging dir is made first)."""
    from releaselib.stage.staged_tree import prepare_staging_dir

    prepare_staging_dir(staging)
    with ExitStack() as stack:
        stack.enter_context(
            held(staging / LOCK_NAME, f"staging dir {staging}", wait=wait, on_wait=on_wait)
        )
        if ledger is not None:
            stack.enter_context(ledger_lock(ledger, wait=wait, on_wait=on_wait))
        yield


def to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextmanager
def ledger_lock(
    ledger: Path, *, wait: bool = True, on_wait: Callable[[str], None] = to_stderr
) -> Iterator[None]:
    """Hold ``ledger``'s lock, unless this process holds it already (a run holds it
    throughout; each ledger write takes it too)."""
    lock = ledger.with_name(ledger.name + ".lock")
    if lock.absolute() in _HELD:
        yield
        return
    lock.parent.mkdir(parents=True, exist_ok=True)
    with held(lock, f"ledger {ledger}", wait=wait, on_wait=on_wait):
        yield
