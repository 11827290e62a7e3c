"""An env the ledger holds no verdict for (staged only, or deployed and never verified) has no
outcome in the briefing: it says so, never INCONCLUSIVE, and the counts add up to what happened."""

from __future__ import annotations

from pathlib import Path

from releaselib.config import release_key
from releaselib.ledger.ledger import Ledger
from releaselib.ledger.report import build_report, render_briefing
from tests.helpers import release_config


def test_an_env_never_deployed_or_verified_is_said_so_not_inconclusive(tmp_path: Path) -> None:
    config = release_config(tmp_path / "OpenEnv", tmp_path / "staging", ref="main")
    ledger = Ledger.load(tmp_path / "ledger.json", release_key(config))
    for env in ("echo_env", "snake_env", "chess_env", "maze_env"):
        ledger.record(env, "stage", manifest_hash="h", space_id=f"openenv/{env}-0.2.2")
    for env in ("echo_env", "snake_env", "maze_env"):
        ledger.record(env, "deploy", space_id=f"openenv/{env}-0.2.2", head="c1")
    for env in ("echo_env", "snake_env"):
        ledger.record(env, "verify", outcome="PASS", commit="c1", space_id=f"openenv/{env}-0.2.2")
    report = build_report(config, ledger)
    outcomes = {e["env"]: e["outcome"] for e in report["envs"]}
    assert outcomes == {"echo_env": "PASS", "snake_env": "PASS", "chess_env": "not deployed", "maze_env": "not verified"}
    assert report["counts"]["outcome"] == {"PASS": 2, "not deployed": 1, "not verified": 1}
    assert report["inconclusive"] == []
    briefing = render_briefing(report)
    assert "**4 envs**: 1 not deployed, 1 not verified, 2 PASS;" in briefing
    assert "INCONCLUSIVE" not in briefing
    assert "### chess_env: not deployed, not promoted yet" in briefing
    assert "- decision: not promoted yet, not deployed" in briefing
    assert "- decision: not promoted yet, not verified yet" in briefing
