"""The status board's one rule (README, "release, the ledger, status and report"), across every
outcome the ledger can hold: each cell from the ledger's records and the Hub's listing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from releaselib.config import ReleaseConfig
from releaselib.ledger.ledger import Ledger
from releaselib.ledger.status import COLUMNS, board

SPACE = "openenv/echo_env-0.2.2"
OK = {"POST /reset": 200, "POST /step": 200}
Steps = list[tuple[str, str, dict[str, Any]]]


def stage_deploy() -> Steps:
    return [("stage", "done", {"manifest_hash": "h", "space_id": SPACE}), ("deploy", "done", {"space_id": SPACE, "head": "c1"})]


def verified(outcome: str, stage: str = "RUNNING", **more: Any) -> Steps:
    status = "failed" if outcome == "INCONCLUSIVE" else "done"
    return [*stage_deploy(), ("verify", status, {"outcome": outcome, "stage": stage, "commit": "c1", **more})]


PASSED = verified("PASS", checks=OK)
PROMOTED = [*PASSED, ("promote", "done", {"decision": "promoted"}), ("collection", "done", {"added": True})]

WS_FAIL_AT_STEP = {
    "domain": "x.hf.space",
    "outcome": "FAIL",
    "transcript": [{"request": r, "status": st} for r, st in [("POST /reset", 404), ("WS /ws", 101), ("WS reset", 101), ("WS step", 101)]],
}

# name -> (records, the Hub's runtime stage, the expected cells in COLUMNS order)
CASES: dict[str, tuple[Steps, str | None, str]] = {
    "staged only": ([("stage", "done", {"manifest_hash": "h", "space_id": SPACE})], None, "✓ · · · · · · · ·"),
    "stage failed": ([("stage", "failed", {"manifest_hash": None, "space_id": SPACE, "error": "x"})], None, "✗ - · · · · - - -"),
    "deploy failed": ([stage_deploy()[0], ("deploy", "failed", {"space_id": SPACE, "error": "x"})], None, "✓ · ✗ · · · - - -"),
    "deployed, building": (stage_deploy(), "BUILDING", "✓ · ✓ · · · · · ·"),
    "deployed, running, not verified": (stage_deploy(), "RUNNING", "✓ · ✓ ✓ · · · · ·"),
    "BUILD_ERROR": (verified("FAIL", "BUILD_ERROR"), "BUILD_ERROR", "✓ · ✓ ✗ - - - - ·"),
    "RUNTIME_ERROR": (verified("FAIL", "RUNTIME_ERROR"), "RUNTIME_ERROR", "✓ · ✓ ✓ ✗ - - - ·"),
    "reset answered 500": (verified("FAIL", checks={"POST /reset": 500}), "RUNNING", "✓ · ✓ ✓ ✗ - - - ·"),
    "step answered 422": (verified("FAIL", checks={"POST /reset": 200, "POST /step": 422}), "RUNNING", "✓ · ✓ ✓ ✓ ✗ - - ·"),
    "FAIL pinned": ([*verified("FAIL", checks={"POST /reset": 500}), ("pin", "done", {"decision": "pinned"})], "RUNNING", "✓ · ✓ ✓ ✗ - - - ✓"),
    "FAIL, pin failed": ([*verified("FAIL", checks={"POST /reset": 500}), ("pin", "failed", {"decision": "pinned", "error": "x"})], "RUNNING", "✓ · ✓ ✓ ✗ - - - ✗"),
    "INCONCLUSIVE, no answer": (verified("INCONCLUSIVE", checks={"POST /reset": None}), "RUNNING", "✓ · ✓ ✓ · · - - -"),
    # the cells agree with the verdict, not only with the HTTP statuses (attackA #23)
    "FAIL at step, answered 200": (verified("FAIL", checks=OK), "RUNNING", "✓ · ✓ ✓ ✓ ✗ - - ·"),
    "INCONCLUSIVE at reset, answered 200": (verified("INCONCLUSIVE", checks={"POST /reset": 200}), "RUNNING", "✓ · ✓ ✓ · · - - -"),
    "INCONCLUSIVE at step": (verified("INCONCLUSIVE", checks={"POST /reset": 200, "POST /step": None}), "RUNNING", "✓ · ✓ ✓ ✓ · - - -"),
    "FAIL at step over /ws": (verified("FAIL", checks={"POST /reset": 404, "WS /ws": 101, "WS reset": 101, "WS step": 101}, domain_attempts=[WS_FAIL_AT_STEP]), "RUNNING", "✓ · ✓ ✓ ✓ ✗ - - ·"),
    "PASS over HTTP": (PASSED, "RUNNING", "✓ · ✓ ✓ ✓ ✓ · · -"),
    "PASS over /ws": (verified("PASS", checks={"POST /reset": 200, "POST /step": 500, "WS /ws": 101}), "RUNNING", "✓ · ✓ ✓ ✓ ✓ · · -"),
    "PASS, sleeping": (PASSED, "SLEEPING", "✓ · ✓ ✓ ✓ ✓ · · -"),
    "PASS, promote held": ([*PASSED, ("promote", "done", {"decision": "held", "reason": "no canonical Space"})], "RUNNING", "✓ · ✓ ✓ ✓ ✓ · · -"),
    "PASS, promote failed": ([*PASSED, ("promote", "failed", {"decision": "held"})], "RUNNING", "✓ · ✓ ✓ ✓ ✓ ✗ · -"),
    "PASS, collection failed": ([*PASSED, ("collection", "failed", {"added": False})], "RUNNING", "✓ · ✓ ✓ ✓ ✓ · ✗ -"),
    "PASS, promoted and collected": (PROMOTED, "RUNNING", "✓ · ✓ ✓ ✓ ✓ ✓ ✓ -"),
    "archived": ([*PROMOTED, ("cleanup", "done", {"action": "archive", "result": "done"})], "PAUSED", "✓ · ✓ ~ ✓ ✓ ✓ ✓ -"),
    "deleted": ([*PROMOTED, ("cleanup", "done", {"action": "delete", "result": "done"})], None, "✓ · ✓ ~ ✓ ✓ ✓ ✓ -"),
    "staged with a lock": ([("stage", "done", {"manifest_hash": "h", "space_id": SPACE, "lock": {"digest": "d"}})], None, "✓ ✓ · · · · · · ·"),
    "resolution failed": ([("stage", "done", {"manifest_hash": "h", "space_id": SPACE, "lock": {"unlocked": "resolution failed: x"}})], None, "✓ ✗ · · · · · · ·"),
    "--no-lock": ([("stage", "done", {"manifest_hash": "h", "space_id": SPACE, "lock": {"unlocked": "--no-lock"}})], None, "✓ - · · · · · · ·"),
    "paused by hand": (PASSED, "PAUSED", "✓ · ✓ ~ ✓ ✓ · · -"),
}


@pytest.mark.parametrize("case", CASES)
def test_every_cell_follows_the_one_rule(case: str, tmp_path: Path) -> None:
    records, runtime, want = CASES[case]
    config = ReleaseConfig(repo=tmp_path, version="0.2.2", ref="main", ref_reason="t", dist="openenv-core", suffix="-0.2.2", staging_dir=tmp_path)
    ledger = Ledger.load(tmp_path / "ledger.json", config.as_json())
    for step, status, data in records:
        ledger.record("echo_env", step, status=status, **data)  # type: ignore[arg-type]
    (row,) = board(ledger, {SPACE: runtime} if runtime else {}, config)
    assert " ".join(row.cells[c].value for c in COLUMNS) == want
    assert row.as_json()["built"] == row.cells["built"].name.lower()
    assert row.next_action  # every state has a next action
    assert row.unlocked == (records[0][2].get("lock") or {}).get("unlocked")
