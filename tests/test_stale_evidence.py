"""FAIL needs evidence for the commit that was deployed: a stage the runtime reports for another
commit is stale; the watcher polls again and reboots it once before anything is judged."""

from __future__ import annotations

import os
from pathlib import Path

from releaselib.hub.client import RemoteSpace
from releaselib.hub.runtime import SpaceState, settle, watch
from releaselib.localhub import Fault, LocalHub, Scenario, SpaceBehaviour
from releaselib.verify.probe import Outcome
from tests.test_verify import connect, deploy_examples, verify

WAIT_FACTOR = float(os.environ.get("OPENENV_RELEASE_TEST_WAIT_FACTOR", "1"))
STALE = Scenario(spaces=(SpaceBehaviour(repo="openenv/stale*", stale_build_error="old build failed"),))


def state(stage: str, runtime_sha: str, head: str = "head") -> SpaceState:
    return SpaceState.of("acme/x", RemoteSpace("acme/x", True, head, {"stage": stage, "sha": runtime_sha}), 0.0)


def test_a_stage_for_another_commit_is_stale_and_not_terminal() -> None:
    for stage in ("BUILD_ERROR", "RUNTIME_ERROR", "RUNNING", "SLEEPING"):
        assert state(stage, "old").stale and not state(stage, "old").terminal
        assert state(stage, "head").terminal and not state(stage, "head").stale
    assert state("PAUSED", "old").terminal  # never changes by itself: no evidence either way
    assert state("RUNTIME_ERROR", "").terminal  # no runtime sha: the head's


def test_the_watcher_reboots_a_stale_build_error_once_and_the_candidate_passes(tmp_path: Path) -> None:
    with LocalHub(tmp_path / "hub", scenario=STALE) as hub:
        deploy_examples(hub, tmp_path, {"stale_env": "echo_env"})
        result = verify(hub, "stale_env")["stale_env"]
        assert result.outcome is Outcome.PASS, result.reason
        head = connect(hub).space("openenv/stale_env-0.2.2")
        assert head is not None and result.state.sha == head.sha
        restarts = [r for r in hub.requests() if r.path.endswith("/restart")]
        assert len(restarts) == 1


def test_settle_hands_a_stale_state_to_recover_without_rebooting_and_watch_can_poll_it_again(tmp_path: Path) -> None:
    with LocalHub(tmp_path / "hub", scenario=STALE) as hub:
        deploy_examples(hub, tmp_path, {"stale_env": "echo_env"})
        seen = settle(connect(hub), "openenv/stale_env-0.2.2", wait=60.0 * WAIT_FACTOR, interval=0.1)
        assert seen.stage == "BUILD_ERROR" and seen.stale
        polls = list(watch(connect(hub), ["openenv/stale_env-0.2.2"], wait=60.0 * WAIT_FACTOR, interval=0.1))
        last = polls[-1].states["openenv/stale_env-0.2.2"]
        assert last.stage == "RUNNING" and last.terminal and len(polls) > 3
        assert len([r for r in hub.requests() if r.path.endswith("/restart")]) == 1


def test_a_space_still_stale_when_the_wait_ends_is_inconclusive_never_fail(tmp_path: Path) -> None:
    """The factory reboot is refused (403), so the stale BUILD_ERROR stays: no evidence."""
    refused = Scenario(spaces=STALE.spaces, faults=(Fault(endpoint="restart_space", status=403),))
    with LocalHub(tmp_path / "hub", scenario=refused) as hub:
        deploy_examples(hub, tmp_path, {"stale_env": "echo_env"})
        result = verify(hub, "stale_env", wait=2.0 * WAIT_FACTOR, interval=0.1)["stale_env"]
        assert result.outcome is Outcome.INCONCLUSIVE and result.state.stage == "BUILD_ERROR"
        assert "not the deployed" in result.reason and "no evidence" in result.reason
        restarts = [r.status for r in hub.requests() if r.path.endswith("/restart")]
        assert restarts == [403]  # rebooted once only, though it stayed stale for many polls
