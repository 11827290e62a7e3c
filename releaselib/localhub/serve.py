"""Run a LocalHub in the foreground: say how to reach it once, then serve until Ctrl-C.

The first output is one JSON line ``{"endpoint", "token", "ca_bundle"}``, or, with
``print_env``, ``export NAME=value`` lines for ``eval``: the variables a client needs
(``HF_ENDPOINT``, ``HF_TOKEN``, ``SSL_CERT_FILE`` so the https Space domains are trusted, and an
``HF_HOME`` of its own). The token is the embedded Hub's own throwaway one, never the caller's.
"""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from releaselib.errors import ReleaseError
from releaselib.localhub.hub import LocalHub
from releaselib.localhub.scenario import Scenario
from releaselib.space_runtime.builders import BUILD_JOBS, BUILD_TIMEOUT, BUILDERS


def announcement(hub: LocalHub, *, print_env: bool) -> str:
    """What ``serve`` prints first: a JSON line, or ``export`` lines ready for ``eval``."""
    if print_env:
        return "\n".join(
            f"export {name}={shlex.quote(value)}" for name, value in hub.client_env().items()
        )
    found = {"endpoint": hub.endpoint, "token": hub.token, "ca_bundle": str(hub.ca_bundle)}
    return json.dumps(found)


def serve(
    *,
    port: int = 0,
    state_dir: Path | None = None,
    scenario: Path | None = None,
    print_env: bool = False,
    out: TextIO = sys.stdout,
    builder: str = "venv",
    openenv: Path | None = None,
    build_timeout: float = BUILD_TIMEOUT,
    build_jobs: int = BUILD_JOBS,
) -> None:
    """Serve until SIGINT or SIGTERM, then stop every Space process. Call from the main thread.

    ``builder`` defaults to ``venv``: a Hub serving a real checkout must install what its Spaces
    declare (under ``host`` nothing is, and a missing package is no verdict)."""
    stopped = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopped.set())
    loaded = Scenario.load(scenario) if scenario else None
    with LocalHub(
        state_dir,
        scenario=loaded,
        port=port,
        builder=builder,
        openenv=openenv,
        build_timeout=build_timeout,
        build_jobs=build_jobs,
    ) as hub:
        # The one place the token is printed: the caller needs it to talk to this Hub.
        print(announcement(hub, print_env=print_env), file=out, flush=True)
        stopped.wait()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m releaselib.localhub", description=__doc__)
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
    parser.add_argument("--print-env", action="store_true", help="print export lines for eval")
    args = parser.parse_args(argv)
    try:
        serve(
            port=args.port,
            state_dir=args.state_dir,
            scenario=args.scenario,
            builder=args.builder,
            openenv=args.openenv,
            build_timeout=args.build_timeout,
            build_jobs=args.build_jobs,
            print_env=args.print_env,
        )
    except ReleaseError as exc:  # bad input: one line, its exit code, no traceback
        print(f"error: {exc.one_line()}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
