"""The embedded Hub's bounds on Spaces in flight: a Space waits BUILDING and queued for a slot,
holds it while it builds and starts, stays in flight (within the memory's bound) until its
process stops, and a superseded generation frees nothing it does not hold."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from huggingface_hub import HfApi
from localhub_helpers import QUICK_APP, wait_for_stage, write_tree

from releaselib.localhub import LocalHub, Scenario
from releaselib.localhub.in_flight import InFlight
from releaselib.localhub.scenario import SpaceBehaviour
from tests.helpers import waits


def _space(api: HfApi, name: str, tree: Path, **files: str) -> str:
    repo_id = api.create_repo(f"acme/{name}", repo_type="space", space_sdk="docker").repo_id
    write_tree(tree, {**QUICK_APP, **files})
    api.upload_folder(folder_path=tree, repo_id=repo_id, repo_type="space")
    return repo_id


def _queued(api: HfApi, repo_id: str) -> bool:
    runtime = api.get_space_runtime(repo_id)
    return runtime.stage == "BUILDING" and runtime.raw.get("localhubQueued") is True


#: ``acme/first`` never answers: it stays APP_STARTING, holding the one starting slot.
FIRST_NEVER_ANSWERS = Scenario(spaces=(SpaceBehaviour(repo="acme/first", stuck_starting=True),))


@pytest.fixture
def bounded(tmp_path: Path):
    with LocalHub(tmp_path / "hub", spaces=1, scenario=FIRST_NEVER_ANSWERS) as hub:
        yield hub, HfApi(endpoint=hub.endpoint, token=hub.token)


def test_a_space_waits_queued_while_another_starts_and_builds_once_it_stops(
    bounded, tmp_path: Path
) -> None:
    hub, api = bounded
    first = _space(api, "first", tmp_path / "a")
    wait_for_stage(api, first, {"APP_STARTING"})
    second = _space(api, "second", tmp_path / "b")
    assert _queued(api, second)
    wait_for_stage(api, first, {"APP_STARTING"})  # the first keeps its slot meanwhile
    assert _queued(api, second)
    assert api.pause_space(first).stage == "PAUSED"
    wait_for_stage(api, second, {"RUNNING"})
    assert (hub.in_flight.peak_starting, hub.in_flight.held) == (1, 1)
    api.pause_space(second)
    assert hub.in_flight.held == 0


def test_a_running_space_gives_its_starting_slot_to_the_next(bounded, tmp_path: Path) -> None:
    hub, api = bounded
    second = _space(api, "second", tmp_path / "b")
    wait_for_stage(api, second, {"RUNNING"})
    third = _space(api, "third", tmp_path / "c")  # builds while the second runs
    assert wait_for_stage(api, third, {"RUNNING"}).stage == "RUNNING"
    assert api.get_space_runtime(second).stage == "RUNNING"
    assert (hub.in_flight.held, hub.in_flight.starting) == (2, 0)
    assert (hub.in_flight.peak, hub.in_flight.peak_starting) == (2, 1)


def test_a_superseded_queued_space_frees_nothing_it_does_not_hold(bounded, tmp_path: Path) -> None:
    hub, api = bounded
    first = _space(api, "first", tmp_path / "a")
    wait_for_stage(api, first, {"APP_STARTING"})
    second = _space(api, "second", tmp_path / "b")
    assert _queued(api, second)
    newer = api.upload_file(  # a new commit while queued: a new generation, queued in turn
        path_or_fileobj=b"v2\n", path_in_repo="VERSION", repo_id=second, repo_type="space"
    ).oid
    api.restart_space(second)  # and another
    assert _queued(api, second) and hub.in_flight.held == 1
    wait_for_stage(api, first, {"APP_STARTING"})  # still holds the one slot
    api.pause_space(first)
    runtime = wait_for_stage(api, second, {"RUNNING"})
    assert runtime.raw["sha"] == newer
    assert (hub.in_flight.peak, hub.in_flight.held) == (1, 1)


def test_a_crash_frees_the_slot_for_the_next_space(bounded, tmp_path: Path) -> None:
    hub, api = bounded
    crash = _space(api, "crash", tmp_path / "a", **{"app.py": "raise SystemExit(3)\n"})
    assert wait_for_stage(api, crash, {"RUNTIME_ERROR"}).stage == "RUNTIME_ERROR"
    quick = _space(api, "quick", tmp_path / "b")
    wait_for_stage(api, quick, {"RUNNING"})
    assert (hub.in_flight.peak, hub.in_flight.held) == (1, 1)


def test_an_old_generation_never_takes_or_frees_a_newer_ones_slot() -> None:
    slots = InFlight(1)
    assert slots.take("a", 1)
    taken: list[bool] = []
    waiting = threading.Thread(target=lambda: taken.append(slots.take("b", 1)))
    waiting.start()
    slots.moved_on("b", 2)  # b's generation 1 gives up waiting, holding nothing
    waiting.join(waits(10))
    assert taken == [False] and slots.held == 1
    slots.release("a", 1)
    assert slots.take("b", 2)
    slots.release("b", 1)  # a late release by the old generation
    assert slots.held == 1
    slots.moved_on("b", 3)  # the next generation began: generation 2's slot is free
    assert slots.held == 0 and slots.peak == 1


def test_spaces_that_answer_stay_in_flight_within_the_running_bound() -> None:
    slots = InFlight(1, running=2)
    assert slots.take("a", 1)
    slots.started("a", 1)
    assert slots.take("b", 1)  # a answers: b may start
    slots.started("b", 1)
    taken: list[bool] = []
    waiting = threading.Thread(target=lambda: taken.append(slots.take("c", 1)))
    waiting.start()
    waiting.join(0.5)
    assert taken == [] and (slots.held, slots.starting) == (2, 0)  # two in flight: c waits
    slots.release("a", 1)
    waiting.join(waits(10))
    assert taken == [True] and (slots.held, slots.starting) == (2, 1)
    slots.started("c", 0)  # an old generation's word changes nothing
    assert slots.starting == 1
    assert (slots.peak, slots.peak_starting) == (2, 1)



def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + waits(10)
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_slots_go_in_the_order_they_were_asked_for() -> None:
    slots = InFlight(1)
    assert slots.take("a", 1)
    order: list[str] = []
    for count, name in enumerate(("b", "c", "d"), start=1):
        threading.Thread(target=lambda n=name: slots.take(n, 1) and order.append(n)).start()
        _until(lambda n=count: slots.queued == n)  # b asks first, then c, then d
    for count, name in enumerate(("a", "b", "c"), start=1):
        slots.release(name, 1)
        _until(lambda n=count: len(order) == n)
    assert order == ["b", "c", "d"] and slots.queued == 0
