"""Run a LocalHub in the foreground: say how to reach it once, then serve until Ctrl-C or SIGTERM.

The first output is one JSON line ``{"endpoint", "token", "ca_bundle"}``, or, with
``print_env``, ``export NAME=value`` lines for ``eval``: the variables a client needs
(``HF_ENDPOINT``, ``HF_TOKEN``, ``SSL_CERT_FILE`` so the https Space domains are trusted, and an
``HF_HOME`` of its own). The token is the embedded Hub's own throwaway one, never the caller's.

On a signal it stops at once: every process group it started (a build's uv or pip child, the
Space servers) is killed while the Hub stops, so an install that hangs holds nothing up.
"""

from __future__ import annotations

import json
import shlex
import signal
import sys
import threading
from pathlib import Path
from typing import TextIO

from releaselib import shell
from releaselib.localhub.hub import LocalHub
from releaselib.localhub.scenario import Scenario
from releaselib.space_runtime.builders import BUILD_JOBS, BUILD_TIMEOUT

#: The exit status after SIGTERM (128 + 15), as every task has it.
TERMINATED = 143
#: How often, while the Hub stops, the groups of started commands are killed again (a build
#: queued behind a killed one may start its installer meanwhile).
_KILL_EVERY = 0.2


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
    spaces: int | None = None,
) -> signal.Signals | None:
    """Serve until SIGINT or SIGTERM, then stop every Space process and build; the signal that
    stopped it (the caller exits :data:`TERMINATED` on SIGTERM). Call from the main thread.

    ``builder`` defaults to ``venv``: a Hub serving a real checkout must install what its Spaces
    declare (under ``host`` nothing is, and a missing package is no verdict). ``spaces``: at
    most that many Spaces build or start at once (None: no bound)."""
    stopped = threading.Event()
    received: list[signal.Signals] = []

    def on_signal(signum: int, _frame: object) -> None:
        received.append(signal.Signals(signum))
        stopped.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    loaded = Scenario.load(scenario) if scenario else None
    hub = LocalHub(
        state_dir,
        scenario=loaded,
        port=port,
        builder=builder,
        openenv=openenv,
        build_timeout=build_timeout,
        build_jobs=build_jobs,
        spaces=spaces,
    ).start()
    try:
        # The one place the token is printed: the caller needs it to talk to this Hub.
        print(announcement(hub, print_env=print_env), file=out, flush=True)
        stopped.wait()
    finally:
        stop_now(hub)
    return received[0] if received else None


def stop_now(hub: LocalHub) -> None:
    """Stop ``hub`` while killing every process group this process started, until it has
    stopped: otherwise the stop waits for a build's installer to end (up to its time-out)."""
    stopping = threading.Thread(target=hub.stop, name="localhub-stop", daemon=True)
    stopping.start()
    while stopping.is_alive():
        shell.kill_started()
        stopping.join(_KILL_EVERY)
