"""Only this release's candidate gets a release verdict: verifying any other Space (a canonical
one) prints its result and leaves the ledger as it was (attackA #34)."""

from __future__ import annotations

import json
from pathlib import Path

from huggingface_hub import HfApi

from releaselib.ledger.ledger import Ledger
from releaselib.ledger.step_records import NOT_RECORDED, record_verdicts
from releaselib.localhub import LocalHub
from releaselib.verify.candidates import verify_spaces
from releaselib.verify.probe import Outcome
from tests.helpers import cli, offline, wait_flag, waits
from tests.test_verify import (
    SUFFIX,
    connect,
    deploy_examples,
    registry,
    release_config,
    space_tree,
    tls,
)


def test_a_canonical_spaces_pass_never_replaces_the_candidates_fail(tmp_path: Path) -> None:
    config = release_config(tmp_path)
    with LocalHub(tmp_path / "hub") as hub:
        deploy_examples(hub, tmp_path, {"echo_env": "echo_env"})
        api = HfApi(endpoint=hub.endpoint, token=hub.token)
        api.create_repo("openenv/echo_env", repo_type="space", space_sdk="docker")
        api.upload_folder(folder_path=space_tree(tmp_path / "canonical", "echo_env"), repo_id="openenv/echo_env", repo_type="space")
        ledger = Ledger.load(tmp_path / "ledger.json", config.as_json())
        ledger.record("echo_env", "deploy", space_id=f"openenv/echo_env{SUFFIX}", head="c1")
        ledger.record("echo_env", "verify", outcome="FAIL", reason="POST /step answered 500", commit="c1", space_id=f"openenv/echo_env{SUFFIX}")
        env = {**hub.client_env(), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **offline(tmp_path)}
        args = ["verify", "--suffix", SUFFIX, "--space-id", "openenv/echo_env", "--ledger", str(ledger.path), "--wait", wait_flag(60)]
        done = cli(*args, env=env)
        assert done.returncode == 0, done.stderr  # the canonical PASSed
        assert f"openenv/echo_env: not echo_env's candidate in this release (openenv/echo_env{SUFFIX}); its PASS is printed, not recorded" in done.stdout + done.stderr
        assert json.loads(ledger.path.read_text())["envs"]["echo_env"]["verify"]["outcome"] == "FAIL"
        ids = ["openenv/echo_env", f"openenv/echo_env{SUFFIX}"]
        results = verify_spaces(
            connect(hub), ids, suffix=SUFFIX, registry=registry(),
            timeout=waits(30.0), wait=waits(120.0), interval=0.2, jobs=2, tls=tls(hub),
        )
    by_space = {r.space_id: r for r in results}
    canonical, candidate = by_space["openenv/echo_env"], by_space[f"openenv/echo_env{SUFFIX}"]
    assert canonical.env == "echo_env" and canonical.outcome is Outcome.PASS, canonical.reason
    kept = dict((r.space_id, stands) for r, stands in record_verdicts(ledger, [canonical], by="verify"))
    assert kept == {"openenv/echo_env": NOT_RECORDED}
    standing = Ledger.load(ledger.path, config.as_json()).env("echo_env").get("verify")
    assert standing is not None and standing.data["outcome"] == "FAIL"
    assert standing.data["space_id"] == f"openenv/echo_env{SUFFIX}"
    # the candidate's own verdict is recorded
    assert candidate.outcome is Outcome.PASS, candidate.reason
    assert record_verdicts(ledger, [candidate], by="verify") == [(candidate, None)]
    assert ledger.env("echo_env").get("verify").data["outcome"] == "PASS"
