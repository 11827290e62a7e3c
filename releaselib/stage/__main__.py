"""``python -m releaselib.stage {lint,run,docker} [ENV]... [--repo PATH]``: check staged Space
trees on this machine (``staged_checks.check_staged``; the nox sessions ``staged_lint``,
``staged_run`` and ``staged_docker`` run it)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rich.console import Console

from releaselib.stage import staged_checks
from releaselib.stage.staged_checks import REPO_VAR, check_staged


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m releaselib.stage", description=staged_checks.__doc__
    )
    commands = top.add_subparsers(dest="command", required=True)
    lint = commands.add_parser("lint", help="hadolint + static checks of staged Dockerfiles")
    lint.add_argument("envs", nargs="*", help="envs to stage (default: every deployable env)")
    run = commands.add_parser("run", help="run staged Spaces container-less and probe them")
    run.add_argument("envs", nargs="+")
    run.add_argument(
        "--start-timeout", type=float, default=60, help="seconds the server has to listen"
    )
    run.add_argument("--timeout", type=float, default=20, help="seconds per probe request")
    docker = commands.add_parser("docker", help="build and run staged Spaces in an engine")
    docker.add_argument("envs", nargs="+")
    docker.add_argument("--timeout", type=float, default=20, help="seconds per probe request")
    docker.add_argument(
        "--offline",
        action="store_true",
        help="install a wheel built from the checkout instead of the git ref; never pull images",
    )
    for sub in (lint, run, docker):
        sub.add_argument("--repo", help=f"OpenEnv checkout (default: ${REPO_VAR}, else examples/)")
    return top


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    """Run one command; the exit status is 0 when every env passed."""
    args = parser().parse_args(argv)
    return check_staged(
        console or Console(highlight=False),
        args.command,
        repo=args.repo,
        envs=args.envs,
        start_timeout=getattr(args, "start_timeout", 60.0),
        timeout=getattr(args, "timeout", 20.0),
        offline=getattr(args, "offline", False),
    )


if __name__ == "__main__":
    sys.exit(main())
