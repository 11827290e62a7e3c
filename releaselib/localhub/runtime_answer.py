"""The Hub's answer to a Space runtime request (``space_info``/``get_space_runtime``)."""

from __future__ import annotations

from typing import Any

from releaselib.localhub.domains import SpaceDomain


def runtime_dict(
    stage: str, sha: str | None, error: str | None, domains: list[SpaceDomain], builder: str
) -> dict[str, Any]:
    """The Hub's runtime dict, plus ``localhubBuilder`` (no real Hub sends it): the builder that
    stood in for the Space's build, so verify knows when nothing was installed."""
    running = stage in ("RUNNING", "APP_STARTING", "RUNNING_BUILDING")
    runtime: dict[str, Any] = {
        "stage": stage,
        "hardware": {"current": "cpu-basic" if running else None, "requested": "cpu-basic"},
        "storage": None,
        "gcTimeout": 172800,
        "replicas": {"current": 1 if running else 0, "requested": 1},
        "devMode": False,
        "domains": [{"domain": domain.address, "stage": "READY"} for domain in domains],
        "sha": sha,
        "localhubBuilder": builder,
    }
    if error:
        runtime["errorMessage"] = error
    return runtime
