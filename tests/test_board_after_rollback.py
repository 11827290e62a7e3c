"""After a promotion is undone (the ``rollback`` task) or replaced (a later release's commit in
the canonical; a later pin step's lift in the checkout), ``status`` and ``report`` say so, on
the embedded Hub, and the printed next action makes progress instead of looping."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from huggingface_hub import CommitOperationAdd

from openenv_release.cli import program
from releaselib.ledger.commands import FROM_CHECKOUT
from releaselib.ledger.ledger import Ledger
from tests.release_world import Release, make_release

ENVS = {"echo_env": ("PASS", ">=0.2.0"), "broken_env": ("FAIL", None)}


def run_task(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        program.run(["openenv-release", *argv])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def world(localhub, tmp_path: Path, monkeypatch) -> tuple[Release, tuple[str, ...]]:
    """echo_env (PASS) and broken_env (FAIL) staged, deployed and verified, as the ledger says."""
    release = make_release(localhub, tmp_path, ENVS, canonicals=("openenv/echo_env",))
    ledger_path = tmp_path / "ledger.json"
    ledger = Ledger.load(ledger_path, release.config.as_json())
    for v in release.verdicts.values():
        ledger.record(v.env, "stage", manifest_hash="h", space_id=v.space_id)
        ledger.record(v.env, "deploy", space_id=v.space_id, head=v.commit)
        ledger.record(v.env, "verify", outcome=v.outcome, space_id=v.space_id, commit=v.commit, reason=v.reason)
    for key, value in {**localhub.client_env(), "OPENENV_RELEASE_REMOTE": str(tmp_path / "no-remote")}.items():
        monkeypatch.setenv(key, value)
    return release, ("--repo", str(release.config.repo), "--ledger", str(ledger_path), "--version", "0.2.2")


def board(capsys, common: tuple[str, ...]) -> dict[str, dict[str, str]]:
    code, out, err = run_task(capsys, "status", *common, "--json")
    assert code == 0, err
    return {row["env"]: row for row in json.loads(out)}


def briefing(capsys, common: tuple[str, ...], tmp_path: Path) -> str:
    code, _, err = run_task(capsys, "report", *common)
    assert code in (0, 1), err
    return (tmp_path / "briefing-ledger.md").read_text()


def test_after_rollback_the_board_and_briefing_say_rolled_back_and_next_promotes_again(localhub, tmp_path: Path, monkeypatch, capsys) -> None:
    release, common = world(localhub, tmp_path, monkeypatch)
    assert run_task(capsys, "promote", *common, "--env", "echo_env")[0] == 0
    assert board(capsys, common)["echo_env"]["promoted"] == "done"
    code, out, _ = run_task(capsys, "rollback", *common, "--env", "echo_env", "--yes", "--json")
    assert code == 0
    restored = json.loads(out)["restores"][0]["commit"]
    assert release.head("openenv/echo_env") == restored

    row = board(capsys, common)["echo_env"]
    assert row["promoted"] == "rolled_back"
    assert f"openenv/echo_env rolled back by rollback (restored as {restored[:12]})" in row["next"]
    assert "cleanup" not in row["next"]
    text = briefing(capsys, common, tmp_path)
    assert "### echo_env: PASS, rolled back" in text
    assert f"- decision: rolled back, openenv/echo_env rolled back by rollback (restored as {restored[:12]})" in text
    assert "No canonical Space holds a candidate of this release." in text  # no flip evidence

    command = row["next"].rpartition(", ")[2].removeprefix(f"{FROM_CHECKOUT}, ")
    assert command.startswith("openenv-release promote ")
    code, _, err = run_task(capsys, *shlex.split(command)[1:])  # runs as printed: progress
    assert code == 0, err
    assert release.head("openenv/echo_env") != restored
    assert board(capsys, common)["echo_env"]["promoted"] == "done"


def test_a_canonical_holding_a_later_release_is_superseded_not_promoted(localhub, tmp_path: Path, monkeypatch, capsys) -> None:
    release, common = world(localhub, tmp_path, monkeypatch)
    assert run_task(capsys, "promote", *common, "--env", "echo_env")[0] == 0
    later = release.api.create_commit("openenv/echo_env", [CommitOperationAdd("README.md", b"---\ntitle: later\n---\n# 0.2.3\n")], commit_message="0.2.3", repo_type="space").oid

    row = board(capsys, common)["echo_env"]
    assert row["promoted"] == "superseded"
    assert row["next"] == f"none: openenv/echo_env now holds {later[:12]}, a later release's promotion"
    text = briefing(capsys, common, tmp_path)
    assert "### echo_env: PASS, superseded by a later release" in text
    assert "No canonical Space holds a candidate of this release." in text


def test_a_pin_a_later_release_lifted_is_superseded_where_the_checkout_is_known(localhub, tmp_path: Path, monkeypatch, capsys) -> None:
    release, common = world(localhub, tmp_path, monkeypatch)
    pyproject = release.config.repo / "envs" / "broken_env" / "pyproject.toml"
    original = pyproject.read_text()
    code, _, err = run_task(capsys, "pin", *common, "--env", "broken_env", "--allow-embedded-hub")
    assert code == 0, err
    assert "<0.2.2" in pyproject.read_text()
    assert board(capsys, common)["broken_env"]["pinned"] == "done"

    pyproject.write_text(original)  # as a later release's lift leaves it
    row = board(capsys, common)["broken_env"]
    assert row["pinned"] == "superseded" and row["next"].startswith("none: a later release lifted")
    ledger_only = ("--ledger", common[3])  # no checkout: nothing to check the pin against
    assert board(capsys, ledger_only)["broken_env"]["pinned"] == "done"


def test_before_promote_a_canonical_the_listing_lacks_puts_create_missing_in_the_next_action(localhub, tmp_path: Path, monkeypatch, capsys) -> None:
    release, common = world(localhub, tmp_path, monkeypatch)
    assert "--create-missing" not in board(capsys, common)["echo_env"]["next"]  # it exists
    release.api.delete_repo("openenv/echo_env", repo_type="space")
    command = shlex.split(board(capsys, common)["echo_env"]["next"].removeprefix(f"{FROM_CHECKOUT}, "))
    assert command[:2] == ["openenv-release", "release"] and "--create-missing" in command
