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

from releaselib.localhub import LocalHub, Scenario, in_flight
from releaselib.localhub.in_flight import InFlight, running_spaces
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
def bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(in_flight, "memory_spaces", lambda: 8)  # the same on any machine
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


@pytest.mark.parametrize("spaces", [None, 1])
def test_a_space_created_again_after_a_deletion_builds(tmp_path: Path, spaces) -> None:
    with LocalHub(tmp_path / "hub", spaces=spaces) as hub:
        api = HfApi(endpoint=hub.endpoint, token=hub.token)
        first = _space(api, "again", tmp_path / "a")
        wait_for_stage(api, first, {"RUNNING"})
        api.delete_repo(first, repo_type="space")
        again = _space(api, "again", tmp_path / "b")
        assert wait_for_stage(api, again, {"RUNNING"}).stage == "RUNNING"


def test_a_bug_of_ours_in_a_build_is_the_builders_error_and_frees_the_slot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from releaselib.localhub import spaces as runtimes

    real, calls = runtimes.lay_out, []

    def first_call_breaks(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom\nover two lines")
        return real(*args, **kwargs)

    monkeypatch.setattr(runtimes, "lay_out", first_call_breaks)
    with LocalHub(tmp_path / "hub", spaces=1) as hub:
        api = HfApi(endpoint=hub.endpoint, token=hub.token)
        broken = _space(api, "broken", tmp_path / "a")
        runtime = wait_for_stage(api, broken, {"BUILD_ERROR"})
        message = "embedded Hub builder: RuntimeError: boom over two lines"  # one line: see
        assert runtime.raw["errorMessage"] == message  # SpaceState.builder_made
        after = _space(api, "after", tmp_path / "b")
        assert wait_for_stage(api, after, {"RUNNING"}).stage == "RUNNING"


def test_a_dockerfile_that_is_not_utf8_is_laid_out_as_docker_reads_it(bounded, tmp_path) -> None:
    _, api = bounded
    tree = tmp_path / "latin1"
    write_tree(tree, QUICK_APP)
    dockerfile = tree / "Dockerfile"
    dockerfile.write_bytes(b"# caf\xe9 (latin-1)\n" + dockerfile.read_bytes())
    repo_id = api.create_repo("acme/latin1", repo_type="space", space_sdk="docker").repo_id
    api.upload_folder(folder_path=tree, repo_id=repo_id, repo_type="space")
    assert wait_for_stage(api, repo_id, {"RUNNING"}).stage == "RUNNING"


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + waits(10)
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _asking(slots: InFlight, space: str, generation: int = 1) -> list[bool]:
    """What ``take`` answers, from a thread named ``space`` (a daemon: a failing test never
    hangs the run)."""
    answer: list[bool] = []
    threading.Thread(
        target=lambda: answer.append(slots.take(space, generation)), name=space, daemon=True
    ).start()
    return answer


class _LateWaker(threading.Condition):
    """A condition whose waiter thread named ``late`` looks again only 0.3 s after it is woken,
    so that a waiter woken with it looks first: what it does then is what the queue decides."""

    def __init__(self, late: str) -> None:
        super().__init__()
        self._late = late

    def wait(self, timeout: float | None = None) -> bool:
        woken = super().wait(timeout)
        if threading.current_thread().name == self._late:
            self.release()
            time.sleep(0.3)
            self.acquire()
        return woken


def test_an_old_generation_never_takes_or_frees_a_newer_ones_slot() -> None:
    slots = InFlight(1)
    assert slots.take("a", 1)
    taken = _asking(slots, "b")
    _until(lambda: slots.queued == 1)
    slots.moved_on("b", 2)  # b's generation 1 gives up waiting, holding nothing
    _until(lambda: taken == [False])
    assert slots.held == 1 and slots.queued == 0
    slots.release("a", 1)
    assert slots.take("b", 2)
    slots.release("b", 1)  # a late release by the old generation
    assert slots.held == 1
    slots.moved_on("b", 3)  # the next generation began: generation 2's slot is free
    assert slots.held == 0 and slots.peak == 1


def test_a_waiting_space_starts_as_soon_as_the_starting_one_answers() -> None:
    slots = InFlight(1)
    assert slots.take("a", 1)
    taken = _asking(slots, "b")
    _until(lambda: slots.queued == 1)
    slots.started("a", 1)
    _until(lambda: taken == [True])
    assert (slots.held, slots.starting) == (2, 1)


def test_spaces_that_answer_stay_in_flight_within_the_running_bound() -> None:
    slots = InFlight(1, running=2)
    assert slots.take("a", 1)
    slots.started("a", 1)
    assert slots.take("b", 1)  # a answers: b may start
    slots.started("b", 1)
    taken = _asking(slots, "c")
    _until(lambda: slots.queued == 1)
    assert taken == [] and (slots.held, slots.starting) == (2, 0)  # two in flight: c waits
    slots.release("a", 1)
    _until(lambda: taken == [True])
    assert (slots.held, slots.starting) == (2, 1)
    slots.started("c", 0)  # an old generation's word changes nothing
    assert slots.starting == 1
    assert (slots.peak, slots.peak_starting) == (2, 1)


def test_the_next_in_line_takes_the_slot_of_one_that_gave_up_waiting() -> None:
    slots = InFlight(1)
    slots._changed = _LateWaker("b")  # b, first in line, notices late that it gave up
    assert slots.take("a", 1)
    gave_up = _asking(slots, "b")
    _until(lambda: slots.queued == 1)
    taken = _asking(slots, "c")
    _until(lambda: slots.queued == 2)
    slots.release("a", 1)
    slots.moved_on("b", 2)  # b, first in line, gave up (or took and was superseded): c's turn
    _until(lambda: taken == [True] and len(gave_up) == 1)
    assert slots.held == 1 and slots.queued == 0


def test_two_slots_freed_go_to_the_two_first_in_line() -> None:
    slots = InFlight(2)
    assert slots.take("a", 1) and slots.take("b", 1)
    answers = []
    for count, name in enumerate(("c", "d", "e"), start=1):
        answers.append(_asking(slots, name))
        _until(lambda n=count: slots.queued == n)
    slots.release("a", 1)
    slots.release("b", 1)
    _until(lambda: answers[:2] == [[True], [True]])
    assert answers[2] == [] and slots.queued == 1


def test_slots_go_in_the_order_they_were_asked_for() -> None:
    slots = InFlight(1)
    slots._changed = _LateWaker("b")  # c and d look before b does, and must let b go first
    assert slots.take("a", 1)
    answers = []
    for count, name in enumerate(("b", "c", "d"), start=1):
        answers.append(_asking(slots, name))
        _until(lambda n=count: slots.queued == n)  # b asks first, then c, then d
    for count, name in enumerate(("a", "b", "c"), start=1):
        slots.release(name, 1)  # whoever holds the one slot lets it go
        _until(lambda n=count: sum(map(len, answers)) == n)
        assert answers[count - 1] == [True], answers  # the first in line took it
    assert slots.queued == 0


@pytest.mark.parametrize(
    ("memory", "limit", "running"),
    [(50, 2, 4), (50, 1, 2), (3, 2, 3), (1, 2, 1), (None, 3, 6)],  # None: the system does not say
)
def test_spaces_in_flight_are_twice_those_starting_within_memory(
    monkeypatch: pytest.MonkeyPatch, memory: int | None, limit: int, running: int
) -> None:
    monkeypatch.setattr(in_flight, "memory_spaces", lambda: memory)
    assert running_spaces(limit) == running
