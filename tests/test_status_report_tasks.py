"""The tasks that read a release's ledger (``status``, ``report``, ``promote``) as a user runs
them against the embedded Hub's private candidates: what they say and how they exit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openenv_release.cli import program
from releaselib.ledger.ledger import Ledger
from releaselib.ledger.paths import default_path
from releaselib.localhub import LocalHub
from releaselib.release import release_key
from tests.release_world import Release, make_release

ENVS = {"echo_env": ("PASS", ">=0.2.0"), "broken_env": ("FAIL", None)}


def recorded(release: Release) -> Path:
    """The release's ledger at its default path: each candidate staged, deployed, verified."""
    ledger = Ledger.load(default_path(release.config), release_key(release.config))
    for env, verdict in release.verdicts.items():
        ledger.record(env, "stage", manifest_hash="h", space_id=verdict.space_id)
        ledger.record(env, "deploy", space_id=verdict.space_id, head=verdict.commit)
        ledger.record(env, "verify", outcome=verdict.outcome, commit=verdict.commit, reason=verdict.reason, stage="RUNNING", space_id=verdict.space_id)
    return ledger.path


def run_task(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        program.run(["openenv-release", *argv])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def as_user(local: LocalHub, monkeypatch: pytest.MonkeyPatch, home: Path, *, token: bool) -> None:
    """The embedded Hub's client variables; without ``token`` no HF_TOKEN and no stored login."""
    for key, value in local.client_env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("OPENENV_RELEASE_REMOTE", str(home / "no-remote"))
    if not token:
        monkeypatch.delenv("HF_TOKEN")
        monkeypatch.setenv("HF_HOME", str(home / "no-login"))


def test_without_a_token_a_private_candidate_is_unknown_never_gone(localhub, tmp_path: Path, monkeypatch, capsys) -> None:
    release = make_release(localhub, tmp_path, ENVS, canonicals=())
    recorded(release)
    common = ("--repo", str(release.config.repo), "--version", "0.2.2", "--staging-dir", str(release.config.staging_dir))
    release.api.delete_repo("openenv/broken_env-0.2.2", repo_type="space")  # truly gone

    as_user(localhub, monkeypatch, tmp_path, token=True)
    code, out, _ = run_task(capsys, "status", *common, "--json")
    seen = {row["env"]: row["runtime"] for row in json.loads(out)}
    assert code == 0 and seen["broken_env"] == "RUNNING"  # not listed: the stage verify saw
    code, out, _ = run_task(capsys, "report", *common, "--json")
    briefed = {e["env"]: e["runtime"] for e in json.loads(out)["envs"]}
    assert code == 0 and briefed["broken_env"] == "not on the Hub" and briefed["echo_env"] not in (None, "not on the Hub")

    as_user(localhub, monkeypatch, tmp_path, token=False)
    for task in ("status", "report"):
        code, out, err = run_task(capsys, task, *common, "--json")
        doc = json.loads(out)
        runtimes = {e["env"]: e["runtime"] for e in (doc if task == "status" else doc["envs"])}
        assert code == 0 and runtimes == {"echo_env": "unknown: no token", "broken_env": "unknown: no token"}, task
        assert "no Hub token: a private Space is listed only to a token that can read it" in err
        assert "not on the Hub" not in out


def test_promote_exits_as_the_readme_says_when_nothing_is_promoted(localhub, tmp_path: Path, monkeypatch, capsys) -> None:
    envs = {**ENVS, "slow_env": ("INCONCLUSIVE", ">=0.2.0")}
    release = make_release(localhub, tmp_path, envs, canonicals=("openenv/echo_env", "openenv/broken_env", "openenv/slow_env"))
    recorded(release)
    as_user(localhub, monkeypatch, tmp_path, token=True)
    common = ("--repo", str(release.config.repo), "--version", "0.2.2", "--staging-dir", str(release.config.staging_dir))
    heads = {s: release.head(s) for s in ("openenv/echo_env", "openenv/broken_env", "openenv/slow_env")}

    code, out, _ = run_task(capsys, "promote", *common, "--env", "broken_env")
    assert code == 1 and "nothing promoted: every canonical of 1 env was held" in out  # it FAILed
    code, out, _ = run_task(capsys, "promote", *common, "--env", "slow_env", "--env", "broken_env", "--json")
    assert code == 1  # one FAILed, one INCONCLUSIVE: the FAIL decides
    code, out, _ = run_task(capsys, "promote", *common, "--env", "slow_env")
    assert code == 5 and "nothing promoted" in out  # nothing decisive happened
    code, out, _ = run_task(capsys, "promote", *common, "--dry-run")
    assert code == 0 and "nothing promoted" not in out  # echo_env's promotion is planned
    assert {s: release.head(s) for s in heads} == heads
