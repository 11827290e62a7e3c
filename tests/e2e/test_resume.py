"""``release`` killed (SIGKILL) at several points and restarted ends where an uninterrupted run
ends: the same ledger decisions, the same Hub state (every file's blob), and no duplicate
commits. Each kill point runs against a fresh Hub; ``nox -s resume`` repeats each 8 times."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from huggingface_hub import HfApi

from releaselib.localhub import LocalHub
from releaselib.rehearse import copy_checkout, examples_dir
from tests.helpers import MAIN, offline, wait_flag, waits

pytestmark = [pytest.mark.e2e, pytest.mark.resume]

ENVS = ("broken_env", "echo_env")
Condition = Callable[[dict[str, Any]], bool]


def checkout_with(tmp: Path) -> Path:
    source = tmp / "source"
    shutil.copytree(examples_dir(), source)
    for env in os.listdir(source / "envs"):
        if env not in ENVS:
            shutil.rmtree(source / "envs" / env)
    return copy_checkout(source, tmp / "OpenEnv")


def start_release(hub: LocalHub, repo: Path, staging: Path) -> subprocess.Popen[bytes]:
    args = ["release", "--repo", str(repo), "--staging-dir", str(staging),
            "--hub-endpoint", hub.endpoint, "--timeout", wait_flag(5), "--wait", wait_flag(120), "--json",
            "--allow-embedded-hub"]
    env = {**os.environ, **hub.client_env(), **offline(repo)}
    return subprocess.Popen([sys.executable, "-c", MAIN, *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def read_ledger(staging: Path) -> dict[str, Any] | None:
    path = staging / "ledger-openenv-0.2.2.json"
    return json.loads(path.read_text()) if path.exists() else None  # must always parse


def run_until(hub: LocalHub, repo: Path, staging: Path, condition: Condition | None) -> None:
    """Run release; SIGKILL it once ``condition`` holds on the ledger (or let it finish)."""
    proc = start_release(hub, repo, staging)
    deadline = time.monotonic() + waits(240)
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            ledger = read_ledger(staging)
            if condition is not None and ledger is not None and condition(ledger):
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.05)
    finally:
        if proc.poll() is None and condition is None:
            proc.wait(timeout=max(1, deadline - time.monotonic()))
        proc.kill()
        proc.wait()
    read_ledger(staging)


def has(step: str, count: int = 1) -> Condition:
    return lambda ledger: sum(step in steps for steps in ledger["envs"].values()) >= count


def outcome(ledger: dict[str, Any]) -> dict[str, dict[str, tuple[Any, ...]]]:
    """Per env and step: status and the decision fields (no times, attempts or shas)."""
    keep = ("outcome", "decision", "targets")
    return {
        env: {step: (rec["status"], *(rec.get(k) for k in keep)) for step, rec in steps.items()}
        for env, steps in ledger["envs"].items()
    }


def hub_state(hub: LocalHub) -> dict[str, tuple[int, dict[str, str]]]:
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    state = {}
    for space in api.list_spaces(author="openenv"):
        commits = api.list_repo_commits(space.id, repo_type="space")
        files = {f.path: f.blob_id for f in api.list_repo_tree(space.id, repo_type="space", recursive=True) if hasattr(f, "blob_id")}
        state[space.id] = (len(commits), files)
    return state


def differences(got: LocalHub, want: LocalHub) -> list[str]:
    """Each file whose blob differs between the two Hubs, with both contents (so a failure
    says why, not only that)."""
    ours, theirs = hub_state(got), hub_state(want)
    out = []
    for space in sorted(ours.keys() | theirs.keys()):
        a, b = ours.get(space, (0, {}))[1], theirs.get(space, (0, {}))[1]
        for path in sorted(p for p in a.keys() | b.keys() if a.get(p) != b.get(p)):
            texts = [_text(hub, space, path) for hub in (got, want)]
            out.append(f"{space}/{path}:\n--- killed\n{texts[0]}\n--- clean\n{texts[1]}")
    return out


def _text(hub: LocalHub, space: str, path: str) -> str:
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    try:
        return Path(api.hf_hub_download(space, path, repo_type="space", cache_dir=hub.state_dir / "dl")).read_text()[:2000]
    except Exception as exc:  # absent on one side
        return f"({type(exc).__name__})"


def prepared_hub(state: Path) -> LocalHub:
    hub = LocalHub(state).start()
    HfApi(endpoint=hub.endpoint, token=hub.token).create_repo("openenv/echo_env", repo_type="space", space_sdk="docker")
    return hub


#: Where a run is killed: once the ledger holds these records. "every" kills at each in turn.
KILL_POINTS = {
    "stage": [has("stage", 2)],
    "deploy": [has("deploy", 1)],
    "verify": [has("verify", 1)],
    "promote": [has("promote", 1)],
    "every": [has("stage", 2), has("deploy", 1), has("verify", 1), has("promote", 1)],
}
#: Each kill point runs against a fresh Hub this many times (``nox -s resume`` raises it).
REPEAT = int(os.environ.get("OPENENV_RELEASE_RESUME_REPEAT", "1"))


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory):
    """One uninterrupted release: its ledger, checkout and Hub are what every killed one must
    end as."""
    tmp = tmp_path_factory.mktemp("clean")
    hub = prepared_hub(tmp / "hub")
    try:
        repo = checkout_with(tmp)
        run_until(hub, repo, tmp / "staging", None)
        ledger = read_ledger(tmp / "staging")
        assert ledger is not None
        yield hub, repo, ledger
    finally:
        hub.stop()


@pytest.mark.parametrize("repeat", range(REPEAT))
@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_killed_and_restarted_release_matches_an_uninterrupted_one(clean, tmp_path: Path, point: str, repeat: int) -> None:
    clean_hub, clean_repo, expected = clean
    killed_hub = prepared_hub(tmp_path / "hub")
    try:
        repo, staging = checkout_with(tmp_path), tmp_path / "staging"
        for condition in KILL_POINTS[point]:
            run_until(killed_hub, repo, staging, condition)
        run_until(killed_hub, repo, staging, None)
        got = read_ledger(staging)
        assert got is not None
        assert outcome(got) == outcome(expected)
        assert got["envs"]["echo_env"]["promote"]["decision"] == "promoted"
        assert got["envs"]["broken_env"]["pin"]["decision"] == "pinned"
        assert differences(killed_hub, clean_hub) == []
        assert all(commits == 1 for commits, _ in hub_state(killed_hub).values())
        assert (repo / "envs" / "broken_env" / "pyproject.toml").read_text() == (
            clean_repo / "envs" / "broken_env" / "pyproject.toml"
        ).read_text()
    finally:
        killed_hub.stop()


CARD = """
import sys
from pathlib import Path
from releaselib.config import ReleaseConfig
from releaselib.publish.promote import space_card
config = ReleaseConfig(repo=Path("."), version="0.2.2", ref="main", ref_reason="t", dist="openenv-core", suffix="-0.2.2")
tree = Path(sys.argv[1])
sys.stdout.write(space_card(config, "echo_env", tree, "openenv/echo_env") + space_card(config, "echo_env", tree, "openenv/echo_env-0.2.2"))
"""


def test_the_card_depends_only_on_the_release_tuple_and_the_tree(tmp_path: Path) -> None:
    """The same card from processes that differ in hash seed, time zone, locale, working and
    temp directory, and Hub endpoint."""
    tree = checkout_with(tmp_path)
    cards = set()
    for seed, tz, lang in (("0", "UTC", "C.UTF-8"), ("1", "Asia/Tokyo", "C"), ("2", "America/Lima", "")):
        folder = tmp_path / f"cwd-{seed}"
        folder.mkdir()
        env = {**os.environ, "PYTHONHASHSEED": seed, "TZ": tz, "LC_ALL": lang, "TMPDIR": str(folder), "HF_ENDPOINT": f"http://127.0.0.1:{4000 + int(seed)}"}
        done = subprocess.run([sys.executable, "-c", CARD, str(tree)], cwd=folder, env=env, capture_output=True, check=True)
        cards.add(done.stdout)
    assert len(cards) == 1
