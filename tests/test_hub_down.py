"""Every task that talks to the Hub gives up on one that is down the same way: the two quick
tries of ``releaselib.hub.retry``, then one stderr line naming the endpoint, and no retry lines
from huggingface_hub's own backoff."""

from __future__ import annotations

import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from releaselib.config import release_key
from releaselib.errors import HubError
from releaselib.hub.client import Hub
from releaselib.hub.retry import RetryPolicy
from releaselib.ledger.ledger import Ledger
from releaselib.ledger.paths import default_path
from releaselib.localhub import Fault, LocalHub, Scenario
from releaselib.options import Options, build_config
from tests.helpers import TEST_SHA, offline, waits

PROJECT = Path(__file__).resolve().parents[1]
#: every task that reaches the Hub, with the flags it needs besides --repo/--staging-dir/--hub-endpoint
TASKS = (
    "deploy --env echo_env",
    "verify",
    "recover --env echo_env",
    "promote",
    "collection",
    "cleanup --archive --yes",
    "release --env echo_env",
    "status",
    "report",
)


@pytest.fixture(scope="module")
def down(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """An endpoint that refuses connections, and a staging dir whose ledger holds a deployed PASS."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{s.getsockname()[1]}"
    staging = tmp_path_factory.mktemp("down") / "s"
    config, _ = build_config(Options(repo=str(PROJECT / "examples"), staging_dir=str(staging), hub_endpoint=endpoint, remote=str(staging / "no-remote"), ref=TEST_SHA, dist="openenv"))
    ledger = Ledger.load(default_path(config), release_key(config))
    ledger.record("echo_env", "deploy", space_id="openenv/echo_env-0.2.2", head="a" * 40)
    ledger.record("echo_env", "verify", outcome="PASS", reason="reset and step answered", commit="a" * 40)
    return endpoint, staging


@pytest.mark.parametrize("task", TASKS)
def test_a_hub_that_is_down_is_one_stderr_line_naming_the_endpoint(task: str, down: tuple[str, Path]) -> None:
    endpoint, staging = down
    home = staging.parent / "home"
    result = subprocess.run(
        [sys.executable, "-c", "from openenv_release.cli import main; main()", *shlex.split(task),
         "--repo", str(PROJECT / "examples"), "--staging-dir", str(staging), "--hub-endpoint", endpoint],
        capture_output=True, text=True, timeout=waits(120),
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), "HF_HOME": str(home / "hf"), "HF_TOKEN": "hf_" + "x" * 34,
             "PYTHONPATH": str(PROJECT), **offline(staging.parent)},
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "Retrying" not in result.stderr and "thrown while" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"cannot reach the Hub at {endpoint} " in errors[0], result.stderr


def test_a_hub_answering_503_to_everything_gets_our_tries_only_then_one_error(tmp_path: Path) -> None:
    """huggingface_hub's own backoff around listings would try 6 times more per try of ours
    (36 requests, 94 s, 11 warning lines): the transport's give-up is final."""
    policy = RetryPolicy(base=0.01, cap=0.05)
    with LocalHub(tmp_path / "hub", scenario=Scenario(faults=(Fault(method="GET", path="/api/spaces", status=503),))) as local:
        hub = Hub.connect(local.endpoint, token=local.token, policy=policy)
        with pytest.raises(HubError, match=f"list Spaces of openenv: the Hub at {local.endpoint} answered 503 {policy.attempts} times"):
            hub.list_spaces("openenv")
        assert [r.status for r in local.requests() if r.path == "/api/spaces"] == [503] * policy.attempts
