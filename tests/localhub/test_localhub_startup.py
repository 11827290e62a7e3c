"""A Space that never opens its port stays APP_STARTING for the Hub's own launch timeout, then is
a RUNTIME_ERROR that says so; it is never reported as a crash our stopping caused."""

from __future__ import annotations

from pathlib import Path

import pytest

from releaselib.localhub import LocalHub
from releaselib.localhub import spaces as spaces_module
from tests.space_runtime.test_engine_builder import deploy, space_tree


def test_the_launch_timeout_is_the_hubs_and_its_message_is_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert spaces_module.STARTUP_TIMEOUT >= 30 * 60  # the Hub's default startup_duration_timeout
    monkeypatch.setattr(spaces_module, "STARTUP_TIMEOUT", 3.0)
    tree = space_tree(tmp_path / "s", cmd='["python", "-c", "import time; time.sleep(120)"]')
    with LocalHub(tmp_path / "hub") as hub:
        runtime = deploy(hub, tree, "quiet_env")
    assert runtime.stage == "RUNTIME_ERROR"
    assert runtime.raw["errorMessage"] == "Launch timed out, workload was not healthy after 0.05 min"
