"""The rehearsal with stale BUILD_ERRORs (from before the push) ends as a clean one does."""

from __future__ import annotations

from pathlib import Path

import pytest

from releaselib.localhub import Scenario
from releaselib.rehearse import examples_dir, rehearse

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # whole releases, run again: .ci/run runs them


def test_a_stale_build_error_is_no_evidence_and_pins_nothing(tmp_path: Path) -> None:
    scenario = Scenario.load(examples_dir() / "scenarios" / "stale-build.yaml")
    result = rehearse(tmp_path / "r", scenario=scenario)
    assert result.mismatches == []  # echo_env and legacy_env PASS and are promoted
    decisions = {e["env"]: e["decision"] for e in result.report["envs"]}
    assert decisions["echo_env"] == decisions["legacy_env"] == "promoted"
    pinned = [env for env, decision in decisions.items() if decision == "pinned"]
    assert pinned == ["broken_env"]  # the one env whose build really fails
    assert "<0.2.2" not in (tmp_path / "r" / "OpenEnv" / "envs" / "echo_env" / "pyproject.toml").read_text()
