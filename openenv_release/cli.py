"""The ``openenv-release`` console script: an Invoke Program over the task collection."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from invoke.exceptions import Exit, ParseError
from invoke.parser.context import ParserContext
from invoke.program import Program

from releaselib import __version__

USAGE_REMEDY = "see openenv-release --list and openenv-release --help <task>"
#: the status a shell reports for a tool that SIGPIPE ended (128 + 13), as ``seq 1 9 | head -1``
BROKEN_PIPE = 141


class ReleaseProgram(Program):
    """Invoke's Program, except that a flag or task it cannot parse exits 2, like every other
    bad flag (invoke exits 1, which here means that an env failed), and that the task
    collection is imported only once a task, --list or --help needs it (--version does not)."""

    @property
    def initial_context(self) -> ParserContext:
        return ParserContext(args=self.core_args())  # the flags of a program with a namespace

    def parse_collection(self) -> None:
        if self.namespace is None:
            from openenv_release.tasks import ns

            self.namespace = ns
        super().parse_collection()

    def parse_core(self, argv: list[str] | None) -> None:
        with usage_errors():
            super().parse_core(argv)

    def parse_tasks(self) -> None:
        with usage_errors():
            super().parse_tasks()

    def parse_cleanup(self) -> None:
        """``--help``/``--list`` naming no task or collection is a usage error too (invoke
        raises a ParseError, or exits 1, there)."""
        listed = self.args.list.value
        if isinstance(listed, str):
            try:
                self.collection.subcollection_from_path(listed)
            except KeyError:
                message = f"error: no collection named {listed!r}; {USAGE_REMEDY}"
                raise Exit(message, code=2) from None
        with usage_errors():
            super().parse_cleanup()


@contextmanager
def usage_errors() -> Iterator[None]:
    """A ParseError of invoke's (an unknown flag or task, a flag without its value) as one
    line and exit 2."""
    try:
        yield
    except ParseError as exc:
        raise Exit(f"error: {exc}; {USAGE_REMEDY}", code=2) from None


program = ReleaseProgram(version=__version__, name="openenv-release", binary="openenv-release")


def stdout_is_devnull() -> bool:
    """Whether stdout now points at the null device (rich's answer to a broken pipe)."""
    try:
        here, null = os.fstat(sys.stdout.fileno()), os.stat(os.devnull)
    except (OSError, ValueError):
        return False
    return (here.st_dev, here.st_ino) == (null.st_dev, null.st_ino)


def main() -> None:
    piped_to_null = stdout_is_devnull()
    try:
        program.run()
        sys.stdout.flush()
    except SystemExit as exc:
        # rich meets a closed pipe by pointing stdout at /dev/null and exiting 1, which would
        # read as "an env failed": say what happened instead
        if exc.code == 1 and not piped_to_null and stdout_is_devnull():
            sys.exit(BROKEN_PIPE)
        raise
    except BrokenPipeError:
        # the reader went away (``--list | head -3``): stop quietly, as Unix tools do, and keep
        # the interpreter's final flush of stdout from raising again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(BROKEN_PIPE)


if __name__ == "__main__":  # python -m openenv_release.cli, as the console script
    main()
