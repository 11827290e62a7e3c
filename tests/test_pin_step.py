"""The pin step's decisions from verdicts, on a checkout; the edits themselves are pin.py's."""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import CommitOperationAdd

from releaselib.publish.pin_step import pin_envs
from releaselib.records import Verdict
from tests.release_world import make_release

ENVS = {"echo_env": ("PASS", ">=0.2.0,<0.2.1"), "broken_env": ("FAIL", None), "slow_env": ("INCONCLUSIVE", ">=0.2.0")}


def test_a_stale_pass_lifts_nothing_and_a_fail_pins_whatever_commit_it_was_for(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, ENVS, canonicals=())
    release.api.create_commit("openenv/echo_env-0.2.2", [CommitOperationAdd("fix.txt", b"x")], commit_message="fix", repo_type="space")
    verdicts = {**release.verdicts, "broken_env": Verdict("broken_env", "openenv/broken_env-0.2.2", "FAIL", "0" * 40, "500")}
    decisions = {d.env: d for d in pin_envs(release.hub, release.config, verdicts, embedded_ok=True)}
    assert decisions["echo_env"].decision == "leave" and "verify it again" in decisions["echo_env"].reason
    assert "<0.2.1" in (release.config.repo / "envs" / "echo_env" / "pyproject.toml").read_text()
    assert decisions["broken_env"].decision == "pin" and decisions["broken_env"].changed
    assert decisions["broken_env"].as_json()["decision"] == "pinned"


def test_an_env_without_a_pyproject_is_an_error_for_that_env_only(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, ENVS, canonicals=())
    (release.config.repo / "envs" / "broken_env" / "pyproject.toml").unlink()
    decisions = {d.env: d for d in pin_envs(release.hub, release.config, release.verdicts, envs=["broken_env", "echo_env", "ghost_env"], embedded_ok=True)}
    assert "pyproject.toml not found" in (decisions["broken_env"].error or "")
    assert decisions["echo_env"].changed and decisions["echo_env"].decision == "lift"
    assert (decisions["ghost_env"].decision, decisions["ghost_env"].reason) == ("leave", "not verified")

