"""The ``openenv-release`` console script: an Invoke Program over the task collection."""

from __future__ import annotations

from invoke.program import Program

from openenv_release.tasks import ns
from releaselib import __version__

program = Program(
    namespace=ns, version=__version__, name="openenv-release", binary="openenv-release"
)


def main() -> None:
    program.run()
