"""The one place subprocesses run. Steps take a ``Runner`` so tests can pass a fake one."""

from __future__ import annotations

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
            argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
        )
    except FileNotFoundError as exc:
        return Completed(argv, 127, "", str(exc))
    except subprocess.TimeoutExpired:
        return Completed(argv, 124, "", f"timed out after {timeout}s")
    return Completed(argv, proc.returncode, proc.stdout, proc.stderr)
