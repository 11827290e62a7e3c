"""The tasks that read a release's ledger (``status``, ``report``, ``promote``) as a user runs
them against the embedded Hub's private candidates: what they say and how they exit."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from openenv_release.cli import ReleaseProgram, program
from releaselib.config import release_key
from releaselib.ledger.commands import FROM_CHECKOUT
from releaselib.ledger.ledger import Ledger
from releaselib.ledger.paths import default_path
from releaselib.localhub import LocalHub
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


def next_command(action: str) -> list[str]:
    """The command in a board's next action, as argv after ``openenv-release``."""
    command = action.removeprefix(f"{FROM_CHECKOUT}, ")
    assert command.startswith("openenv-release "), action
    return shlex.split(command)[1:]


def test_status_and_report_need_only_the_ledger_and_their_next_pin_runs_as_printed(localhub, tmp_path: Path, monkeypatch, capsys) -> None:
    """From a folder that is no checkout, with ``--ledger`` alone: the board, the briefing, and
    the printed pin (embedded Hub verdicts: it carries --allow-embedded-hub) run from the checkout."""
    release = make_release(localhub, tmp_path, ENVS, canonicals=())
    ledger = recorded(release)
    as_user(localhub, monkeypatch, tmp_path, token=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    code, out, err = run_task(capsys, "status", "--ledger", str(ledger), "--json")
    assert code == 0, err
    actions = {row["env"]: row["next"] for row in json.loads(out)}
    assert actions["broken_env"].startswith(f"{FROM_CHECKOUT}, openenv-release pin ")
    assert "--allow-embedded-hub" in actions["broken_env"] and "--repo" not in actions["broken_env"]
    code, out, err = run_task(capsys, "report", "--ledger", str(ledger))
    assert code == 0, err
    briefing = (ledger.parent / "briefing-openenv-0.2.2.md").read_text()
    tuple_ = json.loads(ledger.read_text())["release"]
    pin = f"{tuple_['ref']} at {tuple_['sha'][:12]}"
    assert f"OpenEnv ref | `{pin}`: recorded in {ledger}" in briefing  # the pin, read back
    assert f"# {FROM_CHECKOUT} (this briefing was written from the ledger alone)" in briefing

    monkeypatch.chdir(release.config.repo)  # as the action says
    pyproject = release.config.repo / "envs" / "broken_env" / "pyproject.toml"
    assert "<0.2.2" not in pyproject.read_text()
    code, out, err = run_task(capsys, *next_command(actions["broken_env"]))
    assert code == 0, err
    assert '<0.2.2", was = "openenv[core] >= 0.2.0", release = "0.2.2"}' in pyproject.read_text()  # pinned


LEDGER_STATES = {  # env -> records after stage and deploy: every kind of next action
    "a_env": [("verify", {"outcome": "FAIL", "reason": "500"})],
    "b_env": [("verify", {"outcome": "PASS"})],
    "c_env": [("verify", {"outcome": "PASS"}), ("promote", {"decision": "held", "missing": ["openenv/c_env"]})],
    "d_env": [("verify", {"outcome": "PASS"}), ("promote", {"decision": "promoted", "targets": ["openenv/d_env"]})],
    "e_env": [("verify", {"outcome": "PASS"}), ("promote", {"decision": "promoted", "targets": ["openenv/e_env"]}), ("collection", {"added": True})],
    "f_env": [("verify", {"outcome": "INCONCLUSIVE", "reason": "timed out", "our_error": True})],
    "g_env": [("verify", {"outcome": "FAIL", "reason": "500"}), ("pin", {"decision": "pinned", "changed": True})],
    "h_env": [],
}


@pytest.mark.parametrize("checkout_known", [True, False], ids=["with-checkout", "ledger-alone"])
def test_every_printed_command_parses_against_the_tasks_real_flags(tmp_path: Path, checkout_known: bool) -> None:
    from releaselib.config import NO_CHECKOUT
    from releaselib.ledger.report import build_report
    from releaselib.ledger.status import board
    from tests.helpers import release_config

    repo = tmp_path / "OpenEnv" if checkout_known else NO_CHECKOUT
    config = release_config(repo, tmp_path / "staging", ref="main", hub_endpoint="http://127.0.0.1:9")
    ledger = Ledger.load(tmp_path / "my-ledger.json", release_key(config))
    ledger.start_run(flags=["--timeout", "5", "--create-missing"], envs=list(LEDGER_STATES))
    for env, records in LEDGER_STATES.items():
        ledger.record(env, "stage", manifest_hash="h", space_id=f"openenv/{env}-0.2.2")
        ledger.record(env, "deploy", space_id=f"openenv/{env}-0.2.2", head="c1")
        for step, data in records:
            at = ledger.env(env).get("verify")
            ledger.record(env, step, commit="c1", verified_at=at.at if at and step != "verify" else None, **data)
    rows = board(ledger, {}, config)
    commands = [next_command(r.next_action.rpartition(", then ")[2].split(", with a longer")[0]) for r in rows]
    commands += [shlex.split(line)[1:] for line in build_report(config, ledger)["reproduce"]]
    assert {argv[0] for argv in commands} >= {"release", "pin", "promote", "collection", "cleanup", "status", "report"}
    for argv in commands:
        parsed = ReleaseProgram(namespace=None, name="openenv-release", binary="openenv-release")
        parsed.create_config()
        parsed.parse_core(["openenv-release", *argv])
        parsed.parse_collection()
        parsed.parse_tasks()  # an unknown flag or task is SystemExit(2) here
        (task,) = parsed.tasks
        assert task.name == argv[0] and ("--repo" in argv) == checkout_known, argv
        if argv[0] in ("pin", "release"):  # a loopback Hub: pin would refuse without it
            assert "--allow-embedded-hub" in argv, argv
