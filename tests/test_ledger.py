"""Tests for releaselib.ledger.ledger: atomic writes, concurrency, resume semantics, refusals."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from releaselib.errors import LedgerError
from releaselib.files import write_atomic
from releaselib.ledger.ledger import SCHEMA, STEPS, Ledger
from releaselib.ledger.paths import default_path
from tests.helpers import release_config, waits

RELEASE = {"namespace": "openenv", "version": "0.2.2", "suffix": "-0.2.2", "ref": "main"}
CANARY = "canary-7f3e9b1c2d4a"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "staging" / "ledger.json"


def on_disk(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


# Loading


def test_load_creates_an_empty_ledger_on_disk(path: Path) -> None:
    ledger = Ledger.load(path, RELEASE)
    data = on_disk(path)
    assert data["schema"] == SCHEMA
    assert data["release"] == RELEASE
    assert data["envs"] == {}
    assert ledger.to_json() == data
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_records_survive_a_reload(path: Path) -> None:
    Ledger.load(path, RELEASE).record("echo_env", "stage", manifest_hash="h1", files=12)
    entry = Ledger.load(path, RELEASE).env("echo_env")
    stage = entry.get("stage")
    assert stage is not None
    assert (stage.status, stage.attempt, stage.manifest_hash) == ("done", 1, "h1")
    assert stage.data == {"files": 12}
    assert datetime.fromisoformat(stage.at).utcoffset() is not None


@pytest.mark.parametrize(
    "other",
    [
        {**RELEASE, "version": "0.2.3"},
        {**RELEASE, "namespace": "someone"},
        {**RELEASE, "suffix": "-rc1"},
    ],
)
def test_a_ledger_of_another_release_is_refused(path: Path, other: dict[str, str]) -> None:
    Ledger.load(path, RELEASE)
    before = path.read_bytes()
    with pytest.raises(LedgerError) as caught:
        Ledger.load(path, other)
    assert str(path) in str(caught.value) and "--ledger PATH" in str(caught.value)
    assert path.read_bytes() == before


def test_the_same_tuple_with_another_ref_is_the_same_ledger(path: Path) -> None:
    Ledger.load(path, RELEASE).record("echo_env", "stage", manifest_hash="h1")
    assert Ledger.load(path, {**RELEASE, "ref": "v0.2.2"}).done("echo_env", "stage", "h1")


def test_a_release_without_the_tuple_is_a_programming_error(path: Path) -> None:
    with pytest.raises(ValueError, match="suffix"):
        Ledger.load(path, {"namespace": "openenv", "version": "0.2.2"})


@pytest.mark.parametrize(
    "content",
    [
        b'{"schema": 1, "release": {"namespace": "openenv", "ver',
        b"",
        b"\xff\xfe",
        b"[1, 2]",
        b'{"release": {}, "envs": {}}',
        b'{"schema": 1, "release": {}, "envs": {"echo_env": ["stage"]}}',
    ],
)
def test_a_corrupt_file_is_an_error_and_is_left_alone(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with pytest.raises(LedgerError) as caught:
        Ledger.load(path, RELEASE)
    message = str(caught.value)
    assert str(path) in message and "move it aside" in message
    assert path.read_bytes() == content


def test_a_newer_schema_is_refused(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"schema": SCHEMA + 1, "release": RELEASE, "envs": {}}))
    with pytest.raises(LedgerError, match="newer than this tool's") as caught:
        Ledger.load(path, RELEASE)
    assert "upgrade openenv-release" in str(caught.value)


def test_default_path_is_per_release_tuple_under_the_staging_dir(tmp_path: Path) -> None:
    config = release_config(tmp_path, tmp_path / "hf-staging", ref="main", ref_reason="", dist="openenv")
    assert default_path(config) == tmp_path / "hf-staging" / "ledger-openenv-0.2.2.json"
    assert default_path(config.with_(version="0.2.3")) != default_path(config)
    custom = default_path(config.with_(suffix="-rc1"))
    assert custom == tmp_path / "hf-staging" / "ledger-openenv-0.2.2-rc1.json"


# Recording and resuming


def test_later_steps_inherit_the_staged_manifest_hash(path: Path) -> None:
    ledger = Ledger.load(path, RELEASE)
    ledger.record("echo_env", "stage", manifest_hash="h1")
    ledger.record("echo_env", "deploy", space_id="openenv/echo_env-0.2.2", commit="abc123")
    assert ledger.done("echo_env", "deploy", "h1")
    assert not ledger.done("echo_env", "deploy", "h2")
    assert not ledger.done("echo_env", "verify", "h1")
    assert not ledger.done("chat_env", "stage", "h1")


def test_a_failed_step_is_not_done_and_its_retry_counts(path: Path) -> None:
    ledger = Ledger.load(path, RELEASE)
    ledger.record("echo_env", "stage", manifest_hash="h1")
    ledger.record("echo_env", "deploy", status="failed", error="429 Too Many Requests")
    assert not ledger.done("echo_env", "deploy", "h1")
    retried = ledger.record("echo_env", "deploy", commit="abc123")
    assert (retried.status, retried.attempt, dict(retried.data)) == (
        "done",
        2,
        {"commit": "abc123"},
    )
    assert ledger.done("echo_env", "deploy", "h1")


def test_a_changed_env_is_redone_from_staging(path: Path) -> None:
    ledger = Ledger.load(path, RELEASE)
    ledger.record("echo_env", "stage", manifest_hash="h1")
    for step in STEPS[1:]:
        ledger.record("echo_env", step)
    assert all(ledger.done("echo_env", step, "h1") for step in STEPS)
    ledger.record("echo_env", "stage", manifest_hash="h2")
    assert [s for s in STEPS if ledger.done("echo_env", s, "h2")] == ["stage"]


def test_invalidate_from_forgets_that_step_and_the_later_ones(path: Path) -> None:
    ledger = Ledger.load(path, RELEASE)
    for step in ("stage", "deploy", "verify", "pin"):
        ledger.record("echo_env", step, manifest_hash="h1")
    ledger.record("chat_env", "verify", manifest_hash="h1")
    assert ledger.invalidate_from("echo_env", "verify") == ("verify", "pin")
    assert ledger.invalidate_from("echo_env", "verify") == ()
    reloaded = Ledger.load(path, RELEASE)
    assert list(reloaded.env("echo_env").steps) == ["stage", "deploy"]
    assert reloaded.done("chat_env", "verify", "h1")


def test_env_entries_are_snapshots_in_step_order(path: Path) -> None:
    ledger = Ledger.load(path, RELEASE)
    body = ["ok"]
    transcript = {"status": 200, "body": body}
    ledger.record("echo_env", "verify", manifest_hash="h1", transcript=transcript)
    ledger.record("echo_env", "stage", manifest_hash="h1")
    body.append("changed later")
    entry = ledger.env("echo_env")
    assert list(entry.steps) == ["stage", "verify"]
    assert entry.manifest_hash == "h1"
    verify = entry.get("verify")
    assert verify is not None and verify.data["transcript"] == {"status": 200, "body": ["ok"]}
    assert ledger.envs() == ["echo_env"]


@pytest.mark.parametrize(
    ("env", "step", "data", "error"),
    [
        ("echo_env", "deploy", {"at": "yesterday"}, "stamped by the ledger"),
        ("echo_env", "deploy", {"attempt": 7}, "stamped by the ledger"),
        ("echo_env", "launch", {}, "unknown step"),
        ("../etc", "stage", {}, "not a valid env name"),
        ("echo_env", "stage", {"when": datetime.now()}, "not JSON serializable"),
    ],
)
def test_bad_records_are_refused(
    path: Path, env: str, step: str, data: dict[str, Any], error: str
) -> None:
    ledger = Ledger.load(path, RELEASE)
    with pytest.raises((ValueError, TypeError), match=error):
        ledger.record(env, step, **data)
    assert on_disk(path)["envs"] == {}


def test_an_unknown_status_is_refused(path: Path) -> None:
    with pytest.raises(ValueError, match="status must be one of"):
        Ledger.load(path, RELEASE).record("echo_env", "stage", status="maybe")  # type: ignore[arg-type]


# Tokens


@pytest.mark.parametrize(
    "data",
    [
        {"token": CANARY},
        {"transcript": [{"headers": {"authorization": f"Bearer {CANARY}"}}]},
        {CANARY: "as a key"},
        {"note": "hf_" + "a1B2" * 9},
    ],
)
def test_a_token_is_never_written(
    path: Path, monkeypatch: pytest.MonkeyPatch, data: dict[str, Any]
) -> None:
    monkeypatch.setenv("HF_TOKEN", CANARY)
    ledger = Ledger.load(path, RELEASE)
    with pytest.raises(ValueError, match="refusing to write a Hub token") as caught:
        ledger.record("echo_env", "deploy", **data)
    assert CANARY not in str(caught.value) and "hf_a1B2" not in str(caught.value)
    assert CANARY not in path.read_text() and "hf_a1B2" not in path.read_text()


def test_a_release_holding_a_token_is_refused(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", CANARY)
    with pytest.raises(ValueError, match="refusing to write a Hub token"):
        Ledger.load(path, {**RELEASE, "endpoint": f"https://{CANARY}@hub"})
    assert not path.exists()


def test_short_hf_prefixed_words_are_not_tokens(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    ledger = Ledger.load(path, RELEASE)
    ledger.record("echo_env", "deploy", note="hf_transfer is off", space="openenv/hf_env")
    assert ledger.env("echo_env").get("deploy") is not None


# Concurrency and crashes


def test_concurrent_records_from_eight_threads_lose_nothing(path: Path) -> None:
    ledger = Ledger.load(path, RELEASE)
    start = threading.Barrier(8)
    missing: list[str] = []

    def work(worker: int) -> None:
        start.wait()
        for n in range(15):
            env = f"env_{worker}_{n}"
            ledger.record(env, "stage", manifest_hash=f"h{worker}.{n}")
            ledger.record(env, "deploy", log="x" * 1000)
            if "deploy" not in on_disk(path)["envs"].get(env, {}):
                missing.append(env)  # persisted before record returned, never overwritten

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=waits(60))
    assert missing == []
    reloaded = Ledger.load(path, RELEASE)
    assert len(reloaded.envs()) == 8 * 15
    for worker in range(8):
        for n in range(15):
            assert reloaded.done(f"env_{worker}_{n}", "deploy", f"h{worker}.{n}")
    assert [p.name for p in path.parent.iterdir() if p.suffix != ".lock"] == ["ledger.json"]


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from releaselib.ledger.ledger import Ledger

    ledger = Ledger.load(Path(sys.argv[1]), {"namespace": "openenv", "version": "0.2.2",
                                             "suffix": "-0.2.2"})
    n = 0
    while True:
        n += 1
        ledger.record(f"env_{n % 40}", "verify", transcript="x" * 20000, n=n)
    """
)


def test_a_writer_killed_mid_write_never_leaves_a_broken_file(path: Path) -> None:
    for round_ in range(6):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], cwd=ROOT)
        try:
            deadline = time.monotonic() + waits(20)
            # until one record is on disk (a busy machine can take longer than a round's sleep
            # to start the first writer), then a different moment each round
            while not (path.exists() and on_disk(path)["envs"]) and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.1 + 0.07 * round_)
            assert proc.poll() is None, "the writer stopped by itself"
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=waits(10))
        data = on_disk(path)
        assert data["schema"] == SCHEMA
        assert isinstance(data["envs"], dict)
        Ledger.load(path, {"namespace": "openenv", "version": "0.2.2", "suffix": "-0.2.2"})
    assert len(on_disk(path)["envs"]) > 0


def test_a_failed_replace_keeps_the_old_file_and_no_temp_file(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger.load(path, RELEASE)
    before = path.read_bytes()

    def crash(src: object, dst: object) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr("os.replace", crash)
    with pytest.raises(LedgerError, match=r"ledger.json: cannot write the ledger \(disk gone\)"):
        ledger.record("echo_env", "stage", manifest_hash="h1")  # one line naming the path
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir() if p.suffix != ".lock"] == ["ledger.json"]
    assert ledger.env("echo_env").get("stage") is None  # memory stays as on disk
    monkeypatch.undo()
    assert ledger.record("echo_env", "stage", manifest_hash="h1").attempt == 1


def test_write_atomic_keeps_an_existing_files_mode(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")
    target.chmod(0o644)
    write_atomic(target, b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


# Several runs on one ledger


def test_a_run_holding_a_stale_copy_keeps_what_another_recorded(path: Path) -> None:
    release_run = Ledger.load(path, RELEASE)
    verify_run = Ledger.load(path, RELEASE)
    release_run.start_run(flags={})
    verify_run.record("b_env", "verify", verdict="PASS")
    release_run.record("a_env", "verify", verdict="FAIL")
    verify_run.invalidate_from("c_env", "stage")
    envs = on_disk(path)["envs"]
    assert envs["a_env"]["verify"]["verdict"] == "FAIL" and envs["a_env"]["verify"]["run"] == 1
    assert envs["b_env"]["verify"]["verdict"] == "PASS"
    assert len(on_disk(path)["runs"]) == 1


RECORDER = """
import sys
from pathlib import Path
from releaselib.ledger.ledger import Ledger
release = {"namespace": "openenv", "version": "0.2.2", "suffix": "-0.2.2"}
ledger = Ledger.load(Path(sys.argv[1]), release)
print("loaded", flush=True)
sys.stdin.readline()
for n in range(15):
    ledger.record(sys.argv[2], "verify", n=n)
"""


def test_two_processes_recording_into_one_ledger_both_survive(path: Path) -> None:
    env = {"PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RECORDER, str(path), name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for name in ("a_env", "b_env")
    ]
    for proc in procs:  # both hold the ledger as it was before either recorded
        assert proc.stdout is not None and proc.stdout.readline() == "loaded\n"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.close()
    assert [proc.wait(timeout=waits(60)) for proc in procs] == [0, 0]
    envs = on_disk(path)["envs"]
    assert envs["a_env"]["verify"]["n"] == 14 and envs["a_env"]["verify"]["attempt"] == 15
    assert envs["b_env"]["verify"]["n"] == 14 and envs["b_env"]["verify"]["attempt"] == 15


def test_a_ledger_write_waits_for_the_run_holding_its_lock(path: Path) -> None:
    from releaselib.locks import held

    Ledger.load(path, RELEASE)
    lock = path.with_name(path.name + ".lock")
    with held(lock, "ledger", wait=False, on_wait=print):
        proc = subprocess.Popen(
            [sys.executable, "-c", RECORDER, str(path), "a_env"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={"PYTHONPATH": str(ROOT)},
        )
        assert proc.stdout is not None and proc.stderr is not None and proc.stdin is not None
        assert proc.stdout.readline() == "loaded\n"
        proc.stdin.write("go\n")
        proc.stdin.close()
        assert proc.stderr.readline().startswith(f"waiting for pid {os.getpid()}, which holds ledger")
        assert "a_env" not in on_disk(path)["envs"]
    assert proc.wait(timeout=waits(60)) == 0
    assert on_disk(path)["envs"]["a_env"]["verify"]["attempt"] == 15


def test_an_attempt_goes_to_the_history_and_leaves_the_standing_record(path: Path) -> None:
    ledger = Ledger.load(path, RELEASE)
    standing = ledger.record("echo_env", "verify", outcome="PASS", commit="c1")
    tried = ledger.attempt("echo_env", "verify", outcome="INCONCLUSIVE", commit="c1")
    assert tried.status == "failed" and ledger.env("echo_env").get("verify") == standing
    reread = Ledger.load(path, RELEASE)
    assert [r.data["outcome"] for r in reread.history("echo_env", "verify")] == ["PASS", "INCONCLUSIVE"]
    assert on_disk(path)["envs"]["echo_env"]["verify"]["outcome"] == "PASS"


class _StoppedClock(datetime):
    """A clock that does not move (a coarse tick, or one set back to the same instant)."""

    @classmethod
    def now(cls, tz: Any = None) -> _StoppedClock:  # type: ignore[override]
        return cls(2026, 1, 1, tzinfo=tz)


def test_history_keeps_the_order_of_records_made_within_one_clock_tick(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("releaselib.ledger.ledger.datetime", _StoppedClock)
    ledger = Ledger.load(path, RELEASE)
    outcomes = ["PASS", "INCONCLUSIVE", "FAIL", "INCONCLUSIVE"]
    ledger.record("echo_env", "verify", outcome=outcomes[0])
    for outcome in outcomes[1:]:
        ledger.attempt("echo_env", "verify", outcome=outcome)
    history = Ledger.load(path, RELEASE).history("echo_env", "verify")
    assert [r.data["outcome"] for r in history] == outcomes
    assert len({r.at for r in history}) == len(outcomes)
