"""Canonicals verified after promotion: a release whose canonical alone fails to build (the
embedded Hub's scenario fails ``openenv/echo_env``, not its candidate ``echo_env-0.2.2``) rolls
it back to the tree and variables promote recorded, does not pin the env, and says so; an
INCONCLUSIVE canonical is left as promoted, named, and checked again."""

from __future__ import annotations

import ssl
from pathlib import Path

from huggingface_hub import CommitOperationAdd, HfApi

from openenv_release.release_tasks import outcomes
from releaselib.config import release_key
from releaselib.hub.client import Hub
from releaselib.ledger.canonical_report import canonical_rows
from releaselib.ledger.ledger import Ledger
from releaselib.ledger.paths import default_path
from releaselib.ledger.status import Cell, board
from releaselib.localhub import LocalHub, Scenario
from releaselib.options import Options, build_config
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.publish.canonical_check import CheckOptions
from releaselib.publish.steps import canonical_step, promote_step
from releaselib.rehearse import examples_dir
from releaselib.release import Release, ReleaseOptions
from releaselib.stage.discover import discover_envs, select_envs
from releaselib.verify.verdicts import exit_status
from tests.helpers import waits
from tests.release_world import make_release

CANONICAL = "openenv/echo_env"
#: only openenv/echo_env fails to build, never its candidate openenv/echo_env-0.2.2
BROKEN = examples_dir() / "scenarios" / "canonical-build-fails.yaml"
PREVIOUS = {
    "README.md": b"---\ntitle: echo, 0.2.1\nsdk: docker\n---\n# Echo 0.2.1\n",
    "Dockerfile": b"FROM python:3.11-slim\n",
    "assets/board.png": b"\x89PNG not really",
}


def files(api: HfApi, space_id: str) -> dict[str, bytes]:
    """Every file of the Space at its head, by path."""
    paths = api.list_repo_files(space_id, repo_type="space")
    return {p: Path(api.hf_hub_download(space_id, p, repo_type="space")).read_bytes() for p in paths}


def test_a_canonical_that_fails_after_promotion_is_rolled_back_and_not_pinned(checkout: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    with LocalHub(tmp_path / "hub", scenario=Scenario.load(BROKEN)) as local:
        api = HfApi(endpoint=local.endpoint, token=local.token)
        api.create_repo(CANONICAL, repo_type="space", space_sdk="docker")
        own = [CommitOperationAdd(path, content) for path, content in PREVIOUS.items()]
        previous = api.create_commit(CANONICAL, own, commit_message="0.2.1", repo_type="space").oid
        api.add_space_variable(CANONICAL, "MODE", "canonical")
        before = files(api, CANONICAL)

        config, resolution = build_config(
            Options(repo=str(checkout), staging_dir=str(tmp_path / "staging"), hub_endpoint=local.endpoint, remote=str(tmp_path / "no-remote"))
        )
        ledger = Ledger.load(default_path(config), release_key(config))
        options = ReleaseOptions(
            interval=0.2, timeout=waits(10), wait=waits(60), rehearsal="host", allow_embedded_hub=True,
            tls=ssl.create_default_context(cafile=str(local.ca_bundle)),
        )
        events: list[str] = []
        hub = Hub.connect(local.endpoint, token=local.token)
        registry = PluginRegistry(get_plugin_manager())
        specs = select_envs(discover_envs(checkout), ["echo_env"])
        run = Release(config, resolution, hub, registry, ledger, options, events.append).run(specs)

        entry = ledger.env("echo_env")
        assert entry.get("verify").data["outcome"] == "PASS"  # type: ignore[union-attr]
        promoted = entry.get("promote").data["promotions"][0]["pushed"]  # type: ignore[union-attr]
        (check,) = entry.get("canonical").data["checks"]  # type: ignore[union-attr]
        assert check["outcome"] == "FAIL" and "BUILD_ERROR" in check["reason"] and "libcanonical" in check["reason"]
        assert check["previous"] == previous and check["promoted"] == promoted and check["rolled_back"]
        restored = check["rollback"]["commit"]
        assert restored not in (previous, promoted) and api.space_info(CANONICAL).sha == restored
        assert files(api, CANONICAL) == before  # the recorded tree, byte for byte, in a new commit
        assert {k: v.value for k, v in api.get_space_variables(CANONICAL).items()} == {"MODE": "canonical"}
        assert any(e.startswith(f"canonical {CANONICAL}: FAIL") and f"rolled back to {previous[:12]}" in e for e in events), events
        assert "pin" not in events and "verify" in events, events  # a header only over lines

        # its code passed as a candidate: no pin, and the candidate was not touched
        assert entry.get("pin") is None or entry.get("pin").data.get("decision") != "pin"  # type: ignore[union-attr]
        assert "<0.2.2" not in (checkout / "envs" / "echo_env" / "pyproject.toml").read_text()
        (env_report,) = run.report["envs"]
        assert env_report["outcome"] == "PASS" and exit_status(outcomes(run.report))[0] == 1

        (row,) = board(ledger, {}, config)  # the board too: promoted ✗, and what to do
        assert row.cells["promoted"] is Cell.FAILED and "then openenv-release promote " in row.next_action and "--verify --env echo_env" in row.next_action
        assert f"give {CANONICAL} what the candidate has" in row.next_action

        # the briefing says so: both commits, the rollback's, the evidence, what differs
        (row,) = run.report["canonicals"]
        assert (row["target"], row["previous"], row["promoted"], row["outcome"]) == (CANONICAL, previous, promoted, "FAIL")
        assert row["rolled_back"] and row["rolled_back_by"] == "release" and row["rollback_commit"] == restored
        assert "variable MODE: candidate unset, canonical 'canonical'" in row["differences"]
        assert run.briefing is not None
        briefing = run.briefing.read_text()
        sha, lock = config.sha, entry.get("stage").data["lock"].get("digest")  # type: ignore[union-attr]
        assert len(sha) == 40  # the one pin the canonical builds, and its lock (if it has one)
        locked = f"`{lock[:12]}`" if lock else "-"
        assert f"| echo_env | `{CANONICAL}` | `{previous[:12]}` | `{promoted[:12]}` | `{sha[:12]}` | {locked} | FAIL | yes, by release, as `{restored[:12]}` |" in briefing
        assert f"rolled back from `{promoted[:12]}` to the tree of `{previous[:12]}` in commit `{restored[:12]}`; echo_env is not pinned" in briefing
        assert "libcanonical" in briefing and "differs from the candidate: variable MODE" in briefing


def test_an_inconclusive_canonical_is_left_as_promoted_named_and_checked_again(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, {"echo_env": ("PASS", ">=0.2.0")}, canonicals=(CANONICAL,))
    ledger = Ledger.load(tmp_path / "ledger.json", release.config.as_json())
    for v in release.verdicts.values():
        ledger.record(v.env, "verify", outcome=v.outcome, space_id=v.space_id, commit=v.commit)
    (done,) = promote_step(release.hub, release.config, ledger, release.registry)
    release.api.pause_space(CANONICAL)  # no evidence either way: nothing answers, nothing failed
    options = CheckOptions(timeout=waits(5), wait=waits(30), interval=0.1)

    for _ in range(2):  # the next run checks it again
        (check,) = canonical_step(release.hub, release.config, ledger, release.registry, options)
        assert check.outcome == "INCONCLUSIVE" and "PAUSED" in check.reason and check.rollback is None
        assert release.head(CANONICAL) == done.pushed and check.line().endswith("; left as promoted")
    (row,) = canonical_rows(ledger, ledger.env("echo_env"))
    assert row["outcome"] == "INCONCLUSIVE" and not row["rolled_back"] and row["promoted"] == done.pushed


def test_promote_verify_json_carries_each_canonicals_verdict(localhub, tmp_path: Path, monkeypatch, capsys) -> None:
    import contextlib
    import json

    from openenv_release.cli import program

    release = make_release(localhub, tmp_path, {"echo_env": ("PASS", ">=0.2.0")}, canonicals=(CANONICAL,))
    ledger_path = tmp_path / "ledger.json"
    ledger = Ledger.load(ledger_path, release.config.as_json())
    for v in release.verdicts.values():
        ledger.record(v.env, "verify", outcome=v.outcome, space_id=v.space_id, commit=v.commit)
    for key, value in {**localhub.client_env(), "OPENENV_RELEASE_REMOTE": str(tmp_path / "no-remote")}.items():
        monkeypatch.setenv(key, value)
    argv = ["promote", "--repo", str(release.config.repo), "--ledger", str(ledger_path), "--version", "0.2.2"]
    with contextlib.suppress(SystemExit):  # its exit code follows the verdict, which is not the point here
        program.run(["openenv-release", *argv, "--verify", "--json", "--wait", str(waits(30)), "--timeout", str(waits(5))])
    document = json.loads(capsys.readouterr().out)
    (check,) = document["canonicals"]
    recorded = Ledger.load(ledger_path, release.config.as_json()).env("echo_env").get("canonical")
    assert recorded is not None and check == recorded.data["checks"][0]
    assert check["target"] == CANONICAL and check["outcome"] in ("PASS", "FAIL", "INCONCLUSIVE")
    assert check["promoted"] == document["promotions"][0]["pushed"]
