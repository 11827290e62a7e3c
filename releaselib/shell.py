"""The one place subprocesses run. Steps take a ``Runner`` so tests can pass a fake one.

Three shapes, each with its time-out, output and kill in here: :func:`run` (a one-shot command,
its output captured), :func:`start` and :func:`stop` (a long-running server in its own process
group, its output in files; any group still running when this process exits is killed), and
:func:`run_to` (a logged build step: its output appended to a file, its group killed at the
time-out).

Every command :func:`run` starts runs without the ``GIT_*`` variables that redirect git to
another repository (a git hook sets ``GIT_DIR``/``GIT_INDEX_FILE``): the working directory
decides which repository a git command reads and writes; the user's git config and identity
still apply. :func:`start` passes the environment it is given.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol


@dataclass(frozen=True)
class Completed:
    """What a command returned."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


#: What ``git rev-parse --local-env-vars`` lists (less the config ones), and a hook's others.
GIT_REDIRECTS = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
        "GIT_GRAFT_FILE",
        "GIT_SHALLOW_FILE",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_REPLACE_REF_BASE",
        "GIT_INTERNAL_SUPER_PREFIX",
        "GIT_QUARANTINE_PATH",
    }
)


def child_env() -> dict[str, str]:
    """This process's environment without :data:`GIT_REDIRECTS`."""
    return {k: v for k, v in os.environ.items() if k not in GIT_REDIRECTS}


class Runner(Protocol):
    """Runs an argv (never a shell string) and returns what it printed."""

    def __call__(
        self, args: Sequence[str], *, cwd: Path | None = None, timeout: float = 60
    ) -> Completed: ...


def run(args: Sequence[str], *, cwd: Path | None = None, timeout: float = 60) -> Completed:
    """Run ``args`` without a shell; a missing program or a time-out becomes returncode 127/124."""
    argv = tuple(str(a) for a in args)
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        return Completed(argv, 127, "", str(exc))
    except subprocess.TimeoutExpired:
        return Completed(argv, 124, "", f"timed out after {timeout}s")
    return Completed(argv, proc.returncode, proc.stdout, proc.stderr)


#: What a started command's stdout or stderr goes to: an open file.
Sink = IO[bytes] | IO[str]
#: The process groups :func:`start` began, each killed at exit if its leader still runs.
_STARTED: weakref.WeakSet[subprocess.Popen[bytes]] = weakref.WeakSet()


def start(
    args: Sequence[str],
    *,
    stdout: Sink,
    stderr: Sink | int,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``args`` without a shell, stdin closed, as the leader of a new process group, so
    :func:`stop` ends it with its children. ``env`` is the child's whole environment (None:
    this process's); ``stderr`` may be ``subprocess.STDOUT``."""
    popen = subprocess.Popen(
        [str(a) for a in args],
        cwd=cwd,
        env=None if env is None else dict(env),
        stdout=stdout,
        stderr=stderr,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    _STARTED.add(popen)
    return popen


def stop(popen: subprocess.Popen[bytes], timeout: float = 5.0) -> None:
    """SIGTERM the process group ``popen`` leads, SIGKILL it after ``timeout`` seconds, then
    SIGKILL whatever of the group outlived the leader."""
    if popen.poll() is None:
        _signal_group(popen.pid, signal.SIGTERM)
        try:
            popen.wait(timeout)
        except subprocess.TimeoutExpired:
            _signal_group(popen.pid, signal.SIGKILL)
            popen.wait(timeout)
    _signal_group(popen.pid, signal.SIGKILL)  # children that outlived the leader


def run_to(
    args: Sequence[str], out: IO[str], *, timeout: float, env: Mapping[str, str] | None = None
) -> int | None:
    """Run ``args`` with stdout and stderr appended to ``out`` (an open log file); its exit
    status, or None when it still ran after ``timeout`` seconds and its group was killed."""
    out.flush()
    popen = start(args, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        return popen.wait(max(0.0, timeout))
    except subprocess.TimeoutExpired:
        _signal_group(popen.pid, signal.SIGKILL)
        popen.wait()
        return None


def _signal_group(pid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


@atexit.register
def kill_started() -> None:
    """SIGKILL the group of every started command whose leader still runs (at exit, and when a
    caller must stop now: ``localhub.serve`` on SIGTERM while a build's installer runs)."""
    for popen in list(_STARTED):
        if popen.poll() is None:
            _signal_group(popen.pid, signal.SIGKILL)
