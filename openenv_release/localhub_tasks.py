"""The ``localhub`` task namespace: run the embedded Hub in the foreground."""

from __future__ import annotations

from pathlib import Path

from invoke.collection import Collection
from invoke.context import Context
from invoke.tasks import task

from openenv_release.common import reported
from releaselib.errors import UsageError
from releaselib.localhub.serve import serve as serve_hub
from releaselib.space_runtime.builders import BUILD_JOBS, BUILD_TIMEOUT, BUILDERS


@task(
    help={
        "port": "Hub API port on 127.0.0.1 (0: a free one)",
        "state_dir": "folder that keeps repos, commits and collections across restarts",
        "scenario": "YAML/JSON scenario that makes the Hub misbehave",
        "builder": "host (the tool's own Python) or venv (a uv virtual env per Space commit)",
        "openenv": "OpenEnv checkout whose wheel the venv builder installs for the OpenEnv pin",
        "build_timeout": "seconds a build may take before it is a BUILD_ERROR",
        "build_jobs": "builds that run at once",
    }
)
def serve(
    c: Context,
    port: int = 0,
    state_dir: str = "",
    scenario: str = "",
    builder: str = "host",
    openenv: str = "",
    build_timeout: int = int(BUILD_TIMEOUT),
    build_jobs: int = BUILD_JOBS,
) -> None:
    """Print {"endpoint", "token"} as one JSON line, then serve until Ctrl-C."""
    with reported():
        if builder not in BUILDERS:
            raise UsageError(f"--builder {builder!r}: choose one of {', '.join(BUILDERS)}")
    serve_hub(
        port=port,
        state_dir=Path(state_dir) if state_dir else None,
        scenario=Path(scenario) if scenario else None,
        builder=builder,
        openenv=Path(openenv) if openenv else None,
        build_timeout=build_timeout,
        build_jobs=build_jobs,
    )


localhub = Collection("localhub", serve)
