"""A build step's command, its output streamed into the Space's build log, stopped at a deadline.

The log is what the Hub serves at ``/api/spaces/{id}/logs/build``; a failure's BuildError carries
its last lines, as the Hub's errorMessage does.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from releaselib import shell
from releaselib.space_runtime.plan import BuildError

LOG_TAIL = 15


def run_logged(
    argv: Sequence[str],
    out: IO[str],
    *,
    deadline: float,
    limit: float,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run ``argv`` with its output appended to ``out`` (an open log file); BuildError with the
    log's last lines when it fails, or when it is still running at ``deadline`` (a monotonic
    time; ``limit`` is the build timeout the message names). A stopped command's whole process
    group is killed."""
    code = shell.run_to(argv, out, timeout=deadline - time.monotonic(), env=env)
    if code is None:
        out.write(f"the build took longer than {limit:g} s and was stopped\n")
    if code != 0:
        out.flush()
        raise BuildError(tail(Path(out.name)))


def fail(out: IO[str], message: str) -> BuildError:
    """Append ``message`` to the log ``out``; the BuildError to raise, with the log's last lines."""
    out.write(f"{message}\n")
    out.flush()
    return BuildError(tail(Path(out.name)))


def tail(log: Path, lines: int = LOG_TAIL) -> str:
    """The last ``lines`` lines of the log at ``log``."""
    text = log.read_text(errors="replace").strip().splitlines()
    return "\n".join(text[-lines:])
