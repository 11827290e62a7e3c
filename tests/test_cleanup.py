"""Cleanup: only candidates whose promotion is complete, never an unsuffixed Space."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from releaselib.errors import UsageError
from releaselib.publish.cleanup import cleanup
from releaselib.publish.promote import promote
from tests.release_world import make_release, writes

ENVS = {"echo_env": ("PASS", ">=0.2.0"), "textarena_env": ("PASS", ">=0.2.0"), "broken_env": ("FAIL", None)}


def test_delete_removes_only_promoted_candidates_and_is_idempotent(localhub, tmp_path: Path) -> None:
    # wordle is missing, so textarena_env's promotion stays incomplete
    release = make_release(localhub, tmp_path, ENVS, canonicals=("openenv/echo_env", "openenv/sudoku"))
    promote(release.hub, release.config, release.verdicts, release.registry)
    results = {c.env: c for c in cleanup(release.hub, release.config, release.verdicts, release.registry, action="delete", apply=True)}
    assert results["echo_env"].status == "done" and results["echo_env"].steps == ("delete",)
    assert results["textarena_env"].status == "kept" and "openenv/wordle does not exist" in results["textarena_env"].reason
    assert results["broken_env"].status == "kept" and "FAIL" in results["broken_env"].reason
    exists = {s: release.api.repo_exists(s, repo_type="space") for s in ("openenv/echo_env-0.2.2", "openenv/textarena_env-0.2.2", "openenv/broken_env-0.2.2", "openenv/echo_env")}
    assert exists == {"openenv/echo_env-0.2.2": False, "openenv/textarena_env-0.2.2": True, "openenv/broken_env-0.2.2": True, "openenv/echo_env": True}
    localhub.reset_counters()
    again = {c.env: c.status for c in cleanup(release.hub, release.config, release.verdicts, release.registry, action="delete", apply=True)}
    assert again == {"broken_env": "kept", "echo_env": "clean", "textarena_env": "kept"}
    assert writes(localhub) == {}


def test_without_yes_it_only_plans_and_an_unsuffixed_candidate_is_never_touched(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, {"echo_env": ("PASS", ">=0.2.0")}, canonicals=("openenv/echo_env",))
    promote(release.hub, release.config, release.verdicts, release.registry)
    localhub.reset_counters()
    (plan,) = cleanup(release.hub, release.config, release.verdicts, release.registry, action="archive")
    assert (plan.status, plan.steps) == ("planned", ("pause",))  # already private
    assert writes(localhub) == {}
    with pytest.raises(UsageError, match="non-empty suffix"):
        release.config.with_(suffix="")  # a release tuple never has an unsuffixed candidate
    unsuffixed = {"echo_env": replace(release.verdicts["echo_env"], space_id="openenv/echo_env")}
    (kept,) = cleanup(release.hub, release.config, unsuffixed, release.registry, action="delete", apply=True)
    assert kept.status == "kept" and "not a version-suffixed candidate" in kept.reason
    assert writes(localhub) == {}
