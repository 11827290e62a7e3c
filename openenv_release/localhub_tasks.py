"""The ``localhub`` task namespace: run the embedded Hub, and seed it like a real namespace."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from invoke.collection import Collection
from invoke.context import Context
from invoke.exceptions import Exit

from openenv_release.common import plugin_registry, reported
from openenv_release.flags import helps, release_task
from releaselib.errors import UsageError


@release_task(
    help={
        "port": "Hub API port on 127.0.0.1 (0: a free one)",
        "state_dir": "folder that keeps repos, commits and collections across restarts",
        "scenario": "YAML/JSON scenario that makes the Hub misbehave",
        "builder": "venv (the default: a uv virtual env per Space commit, installing what the "
        "Space declares), host (the tool's own Python, installing nothing: only for the bundled "
        "examples/ and the tests), podman or docker",
        "openenv": "OpenEnv checkout holding the pinned commits: the venv builder installs a "
        "wheel built at the commit each Space pins (without it, such a build is the builder's "
        "BUILD_ERROR)",
        "build_timeout": "seconds a build may take before it is a BUILD_ERROR (default 900)",
        "build_jobs": "builds that run at once (default 2)",
        "spaces": "at most N Spaces build or start at once, the others wait BUILDING, queued, "
        "until one answers (RUNNING) or stops, and no more in flight in all than 2N nor than "
        "available memory / 400 MB where the system reports it (default: neither bound)",
        "print_env": "print export HF_ENDPOINT=… HF_TOKEN=… SSL_CERT_FILE=… lines for eval",
    }
)
def serve(
    c: Context,
    port: int = 0,
    state_dir: str = "",
    scenario: str = "",
    builder: str = "venv",
    openenv: str = "",
    build_timeout: int = 0,
    build_jobs: int = 0,
    spaces: str = "",
    print_env: bool = False,
) -> None:
    """Print {"endpoint", "token", "ca_bundle"} as one JSON line, then serve until Ctrl-C."""
    from releaselib.localhub.serve import TERMINATED
    from releaselib.localhub.serve import serve as serve_hub
    from releaselib.options import check_jobs
    from releaselib.space_runtime.builders import BUILDERS

    with reported():
        if builder not in BUILDERS:
            raise UsageError(f"--builder {builder!r}: choose one of {', '.join(BUILDERS)}")
        bound = check_jobs(spaces, "--spaces") if spaces else None
    given: dict[str, Any] = {"build_timeout": build_timeout, "build_jobs": build_jobs}
    stopped_by = serve_hub(
        port=port,
        state_dir=Path(state_dir) if state_dir else None,
        scenario=Path(scenario) if scenario else None,
        builder=builder,
        openenv=Path(openenv) if openenv else None,
        print_env=print_env,
        spaces=bound,
        **{name: value for name, value in given.items() if value},
    )
    if stopped_by == signal.SIGTERM:
        raise Exit("terminated", code=TERMINATED)


@release_task(
    iterable=["env"],
    help=helps(
        "namespace",
        "hub_endpoint",
        canonicals="create the canonical Spaces the plugins name, public",
        env="seed only this env's canonical Spaces (its plugin's, else <namespace>/<env>)",
    ),
)
def seed(
    c: Context,
    canonicals: bool = False,
    env: list[str] | None = None,
    namespace: str | None = None,
    hub_endpoint: str | None = None,
) -> None:
    """Give a running embedded Hub what a real namespace has before a release."""
    from releaselib.config import DEFAULT_NAMESPACE
    from releaselib.hub.client import Hub
    from releaselib.localhub.seed import check_local, named_targets, seed_canonicals
    from releaselib.options import check_namespace
    from releaselib.stage.discover import check_env_flags

    with reported():
        if not canonicals:
            raise UsageError("nothing to seed", remedy="pass --canonicals")
        endpoint = check_local(hub_endpoint or os.environ.get("HF_ENDPOINT"))
        owner = check_namespace("--namespace", namespace or DEFAULT_NAMESPACE)
        registry = plugin_registry()
        targets = named_targets(registry, owner, check_env_flags(env or []))
        for seeded in seed_canonicals(Hub.connect(endpoint), targets):
            print(f"{'created' if seeded.created else 'exists '} {seeded.space_id} (public)")


localhub = Collection("localhub", serve, seed)
