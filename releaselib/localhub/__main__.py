"""``python -m releaselib.localhub [--port 0] [--state-dir DIR] [--scenario FILE] [--builder B]
[--openenv PATH] [--build-timeout S] [--build-jobs N] [--spaces N] [--print-env]``:
``serve.serve`` from the command line (the ``localhub.serve`` task calls the same function)."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from releaselib.errors import ReleaseError, UsageError
from releaselib.localhub import serve as serving
from releaselib.localhub.serve import TERMINATED
from releaselib.options import check_jobs
from releaselib.space_runtime.builders import BUILD_JOBS, BUILD_TIMEOUT, BUILDERS


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m releaselib.localhub", description=serving.__doc__
    )
    parser.add_argument("--port", type=int, default=0, help="Hub API port (default: a free one)")
    parser.add_argument("--state-dir", type=Path, help="keep repos here (default: a temp folder)")
    parser.add_argument("--scenario", type=Path, help="YAML/JSON scenario of faults")
    parser.add_argument(
        "--builder",
        choices=BUILDERS,
        default="venv",
        help="RUN stand-in (default venv: installs what the Space declares; host installs "
        "nothing, for the bundled examples/ only)",
    )
    parser.add_argument("--openenv", type=Path, help="OpenEnv checkout the venv builder installs")
    parser.add_argument("--build-timeout", type=float, default=BUILD_TIMEOUT, help="seconds")
    parser.add_argument("--build-jobs", type=int, default=BUILD_JOBS, help="builds at once")
    parser.add_argument(
        "--spaces",
        type=_at_least_one,
        help="at most N Spaces build or start at once, the others wait BUILDING, queued, until "
        "one answers (RUNNING) or stops, and no more in flight in all than 2N nor than available "
        "memory / 400 MB where the system reports it (default: neither bound)",
    )
    parser.add_argument("--print-env", action="store_true", help="print export lines for eval")
    args = parser.parse_args(argv)
    try:
        stopped_by = serving.serve(
            port=args.port,
            state_dir=args.state_dir,
            scenario=args.scenario,
            builder=args.builder,
            openenv=args.openenv,
            build_timeout=args.build_timeout,
            build_jobs=args.build_jobs,
            spaces=args.spaces,
            print_env=args.print_env,
        )
    except ReleaseError as exc:  # bad input: one line, its exit code, no traceback
        print(f"error: {exc.one_line()}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
    if stopped_by == signal.SIGTERM:
        raise SystemExit(TERMINATED)


def _at_least_one(value: str) -> int:
    try:
        return check_jobs(value, "--spaces")
    except UsageError as exc:
        raise argparse.ArgumentTypeError(exc.one_line()) from None


if __name__ == "__main__":
    main()
