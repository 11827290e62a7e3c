"""pytest plugin: ``localhub`` (a fresh Hub per test), ``localhub_factory`` (Hubs with scenarios).

Enable it with ``pytest_plugins = ["releaselib.localhub.fixtures"]`` in a conftest.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from releaselib.localhub.hub import LocalHub
from releaselib.localhub.scenario import Scenario

#: Read by huggingface_hub at import time, so they are set before any test module imports it.
QUIET_CLIENT_ENV = {
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "HF_HUB_DISABLE_XET": "1",
}


def pytest_configure(config: pytest.Config) -> None:
    for key, value in QUIET_CLIENT_ENV.items():
        os.environ.setdefault(key, value)


@pytest.fixture
def localhub(tmp_path: Path) -> Iterator[LocalHub]:
    """A running Hub with an empty state directory, stopped (with its Spaces) after the test."""
    with LocalHub(tmp_path / "localhub") as hub:
        yield hub


@pytest.fixture
def localhub_factory(tmp_path: Path) -> Iterator[Callable[..., LocalHub]]:
    """``make(scenario, page_size=..., token=...)`` starts a Hub; all are stopped after the test."""
    hubs: list[LocalHub] = []

    def make(
        scenario: Scenario | None = None, *, page_size: int = 100, token: str | None = None
    ) -> LocalHub:
        state = tmp_path / f"localhub-{len(hubs)}"
        hub = LocalHub(state, scenario=scenario, page_size=page_size, token=token)
        hubs.append(hub.start())
        return hub

    yield make
    for hub in hubs:
        hub.stop()
