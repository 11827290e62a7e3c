"""The ``openenv-release`` console script: an Invoke Program over the task collection."""

from __future__ import annotations

from invoke.exceptions import Exit, ParseError
from invoke.program import Program

from openenv_release.tasks import ns
from releaselib import __version__

USAGE_REMEDY = "see openenv-release --list and openenv-release --help <task>"


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
    program.run()
