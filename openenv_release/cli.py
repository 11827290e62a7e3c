"""The ``openenv-release`` console script: an Invoke Program over the task collection."""

from __future__ import annotations

import os
import sys

from invoke.exceptions import Exit, ParseError
from invoke.program import Program

from openenv_release.tasks import ns
from releaselib import __version__

USAGE_REMEDY = "see openenv-release --list and openenv-release --help <task>"
#: the status a shell reports for a tool that SIGPIPE ended (128 + 13), as ``seq 1 9 | head -1``
BROKEN_PIPE = 141


class ReleaseProgram(Program):
    """Invoke's Program, except that a flag or task it cannot parse exits 2, like every other
    bad flag (invoke exits 1, which here means that an env failed)."""

    def parse_core(self, argv: list[str] | None) -> None:
        try:
            super().parse_core(argv)
        except ParseError as exc:
            raise Exit(f"error: {exc}; {USAGE_REMEDY}", code=2) from None

    def parse_tasks(self) -> None:
        try:
            super().parse_tasks()
        except ParseError as exc:
            raise Exit(f"error: {exc}; {USAGE_REMEDY}", code=2) from None


program = ReleaseProgram(
    namespace=ns, version=__version__, name="openenv-release", binary="openenv-release"
)


def main() -> None:
    try:
        program.run()
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (``--list | head -3``): stop quietly, as Unix tools do, and keep
        # the interpreter's final flush of stdout from raising again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(BROKEN_PIPE)
