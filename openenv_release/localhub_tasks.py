"""The ``localhub`` task namespace: run the embedded Hub in the foreground."""

from __future__ import annotations

from pathlib import Path

from invoke.collection import Collection
from invoke.context import Context
from invoke.tasks import task


@task(
    help={
        "port": "Hub API port on 127.0.0.1 (0: a free one)",
        "state_dir": "folder that keeps repos, commits and collections across restarts",
        "scenario": "YAML/JSON scenario that makes the Hub misbehave",
    }
)
def serve(c: Context, port: int = 0, state_dir: str = "", scenario: str = "") -> None:
    """Print {"endpoint", "token"} as one JSON line, then serve until Ctrl-C."""
    from releaselib.localhub.serve import serve as serve_hub

    serve_hub(
        port=port,
        state_dir=Path(state_dir) if state_dir else None,
        scenario=Path(scenario) if scenario else None,
    )


localhub = Collection("localhub", serve)
