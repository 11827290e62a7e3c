"""The one place subprocesses run. Steps take a ``Runner`` so tests can pass a fake one.

Every command runs without the ``GIT_*`` variables that redirect git to another repository
(a git hook sets ``GIT_DIR``/``GIT_INDEX_FILE``): the working directory decides which
repository a git command reads and writes; the user's git config and identity still apply.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


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
