"""The rehearsal with a fifth of Hub API requests failing ends as a clean one does."""

from __future__ import annotations

from pathlib import Path

import pytest

from releaselib.localhub import Scenario
from releaselib.localhub.seed import named_targets
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.rehearse import INTENDED, NAMESPACE, PROMOTED, examples_dir, rehearse

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # whole releases, run again: .ci/run runs them


def test_faults_change_no_decision_and_make_no_duplicate_commit(tmp_path: Path) -> None:
    scenario = Scenario.load(examples_dir() / "scenarios" / "faults-20.yaml")
    result = rehearse(tmp_path / "r", scenario=scenario)
    assert result.mismatches == []
    faults = {k: result.statuses.get(k, 0) for k in ("429", "503", "dropped")}
    assert all(faults.values()) and sum(faults.values()) >= 20, faults  # a fifth of ~150 API calls
    candidates = {f"{NAMESPACE}/{env}-0.2.2" for env in INTENDED}
    registry = PluginRegistry(get_plugin_manager())
    promoted = {t.space_id for t in named_targets(registry, NAMESPACE, PROMOTED)}
    assert promoted == {f"{NAMESPACE}/{name}" for name in ("echo_env", "legacy_env", "sudoku", "wordle")}
    assert set(result.commits) == candidates | promoted
    assert all(count == 1 for count in result.commits.values()), result.commits
