"""The 5-env release: 3 PASS (one with two canonical targets), 1 FAIL, 1 INCONCLUSIVE.

promote, collection, pin and cleanup each run twice; the second run changes nothing.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from openenv_release.cli import program
from releaselib.ledger.ledger import Ledger
from releaselib.publish.cleanup import cleanup
from releaselib.publish.collection import GLOBAL_TITLE, sync_collection
from releaselib.publish.pin_step import pin_envs
from releaselib.publish.promote import promote
from tests.helpers import offline, release_config
from tests.release_world import GOLDEN, make_release, writes

PASSING = ("echo_env", "repl_env", "textarena_env")


def test_a_five_env_release_end_to_end(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path)
    hub, config, verdicts, registry = release.hub, release.config, release.verdicts, release.registry
    candidates = {env: release.candidate(env) for env in verdicts}
    untouched = {s: release.head(s) for s in ("openenv/broken_env", "openenv/slow_env", "openenv/repl_env", "openenv/textarena_env")}

    # promote: exactly the passes, both textarena targets with their own env var
    promoted = promote(hub, config, verdicts, registry)
    assert sorted((d.env, d.target) for d in promoted if d.status == "promoted") == [
        ("echo_env", "openenv/echo_env"), ("repl_env", "openenv/repl"),
        ("textarena_env", "openenv/sudoku"), ("textarena_env", "openenv/wordle"),
    ]
    held = {d.env: d.reason for d in promoted if d.status == "held"}
    assert held == {"broken_env": "FAIL: POST /reset answered 500", "slow_env": "INCONCLUSIVE: POST /reset timed out after 20s"}
    assert hub.variables("openenv/sudoku") == {"TEXTARENA_ENV_ID": "Sudoku-v0"}
    assert hub.variables("openenv/wordle") == {"TEXTARENA_ENV_ID": "Wordle-v0"}

    # collection: private, exactly the passing candidates; the global one untouched
    (versioned,) = sync_collection(hub, config, verdicts, registry)
    collection = release.api.get_collection(versioned.slug)
    assert versioned.created and collection.title == "OpenEnv Environment Hub 0.2.2" and collection.private is True
    assert sorted(i.item_id for i in collection.items) == sorted(candidates[e] for e in PASSING)
    assert {item for item, _ in versioned.skipped} == {candidates["broken_env"], candidates["slow_env"]}
    assert [c.title for c in release.api.list_collections(owner="openenv")] == [collection.title]

    # pin: the failing env below the release, byte for byte; the old pin of a passing env lifted
    pins = {d.env: d for d in pin_envs(hub, config, verdicts, embedded_ok=True)}
    pyproject = config.repo / "envs" / "broken_env" / "pyproject.toml"
    assert pyproject.read_bytes() == (GOLDEN / "broken_env.pinned.toml").read_bytes()
    assert pins["broken_env"].decision == "pin" and pins["broken_env"].changed
    assert "+    'openenv[core] >= 0.2.0,<0.2.2'," in pins["broken_env"].result.diff
    assert pins["repl_env"].decision == "lift" and pins["repl_env"].changed
    assert '"openenv[core]>=0.2.0",' in (config.repo / "envs" / "repl_env" / "pyproject.toml").read_text()
    assert pins["slow_env"].decision == "leave" and pins["slow_env"].reason.startswith("INCONCLUSIVE")
    assert (config.repo / "envs" / "slow_env" / "pyproject.toml").read_text().count("<") == 0
    assert not pins["echo_env"].changed and not pins["textarena_env"].changed

    # cleanup: a plan without apply, then only the promoted candidates are archived
    plan = {c.env: c for c in cleanup(hub, config, verdicts, registry, action="archive")}
    assert {e for e, c in plan.items() if c.status == "planned"} == set(PASSING)
    assert plan["broken_env"].status == plan["slow_env"].status == "kept"
    assert all(hub.space(candidates[e]).stage != "PAUSED" for e in PASSING)
    done = {c.env: c for c in cleanup(hub, config, verdicts, registry, action="archive", apply=True)}
    assert {e for e, c in done.items() if c.status == "done"} == set(PASSING)
    for env in verdicts:
        space = hub.space(candidates[env])
        assert space is not None and space.private is True
        assert (space.stage == "PAUSED") == (env in PASSING)
    assert all(hub.space(t).stage != "PAUSED" for t in ("openenv/echo_env", "openenv/repl", "openenv/sudoku", "openenv/wordle"))
    assert {s: release.head(s) for s in untouched} == untouched

    # every command again: nothing changes
    localhub.reset_counters()
    checkout = {p: p.read_bytes() for p in (config.repo / "envs").rglob("pyproject.toml")}
    assert {d.status for d in promote(hub, config, verdicts, registry)} == {"current", "held"}
    (again,) = sync_collection(hub, config, verdicts, registry)
    assert again.slug == versioned.slug and not again.changed and len(again.present) == 3
    assert not any(d.changed for d in pin_envs(hub, config, verdicts, embedded_ok=True))
    assert {c.status for c in cleanup(hub, config, verdicts, registry, action="archive", apply=True)} == {"clean", "kept"}
    assert localhub.counters().commits == 0 and writes(localhub) == {}
    assert {p: p.read_bytes() for p in checkout} == checkout
    assert GLOBAL_TITLE not in [c.title for c in release.api.list_collections(owner="openenv")]


def run_task(capsys, *argv: str) -> tuple[int, str]:
    """Run the console script's Program in this process (imports are paid once): exit code, stdout."""
    try:
        program.run(["openenv-release", *argv])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().out


def test_the_tasks_read_verdicts_from_the_ledger_and_record_their_decisions(localhub, tmp_path: Path, monkeypatch, capsys) -> None:
    release = make_release(localhub, tmp_path, {"echo_env": ("PASS", ">=0.2.0"), "broken_env": ("FAIL", None), "slow_env": ("INCONCLUSIVE", ">=0.2.0")}, canonicals=("openenv/echo_env",))
    config, repo = release.config, release.config.repo
    ledger = Ledger.load(tmp_path / "ledger.json", config.as_json())
    for v in release.verdicts.values():  # as verify records them; INCONCLUSIVE is a failed step
        ledger.record(v.env, "verify", status="failed" if v.outcome == "INCONCLUSIVE" else "done", space=v.space_id, outcome=v.outcome, commit=v.commit, reason=v.reason)
    for key, value in {**localhub.client_env(), **offline(tmp_path), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}.items():
        monkeypatch.setenv(key, value)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    common = ("--repo", str(repo), "--ledger", str(tmp_path / "ledger.json"), "--version", "0.2.2")

    code, stdout = run_task(capsys, "promote", *common, "--dry-run", "--json")
    assert code == 0 and localhub.counters().commits == 0
    assert {p["env"]: p["status"] for p in json.loads(stdout)["promotions"]} == {"broken_env": "held", "echo_env": "planned", "slow_env": "held"}
    assert run_task(capsys, "promote", *common)[0] == 0 and localhub.counters().commits == 1
    code, stdout = run_task(capsys, "collection", *common, "--json")
    assert code == 0 and json.loads(stdout)["collections"][0]["added"] == ["openenv/echo_env-0.2.2"]
    # verdicts from the embedded Hub write no checkout, unless the user says so
    pyproject = (repo / "envs" / "broken_env" / "pyproject.toml").read_bytes()
    with pytest.raises(SystemExit) as exited:
        program.run(["openenv-release", "pin", *common, "--commit"])
    code, refused = exited.value.code, capsys.readouterr().err
    assert code == 2 and "verdicts come from the embedded Hub" in refused and "--allow-embedded-hub" in refused, refused
    assert (repo / "envs" / "broken_env" / "pyproject.toml").read_bytes() == pyproject
    code, stdout = run_task(capsys, "pin", *common, "--commit", "--allow-embedded-hub")
    assert code == 0 and "+    'openenv[core] >= 0.2.0,<0.2.2'," in stdout
    log = subprocess.run(["git", "log", "--format=%s%n%b", "-1"], cwd=repo, capture_output=True, text=True, check=True).stdout
    assert "Pinned below 0.2.2 (failed): broken_env" in log
    assert run_task(capsys, "cleanup", *common, "--archive")[0] == 0 and release.hub.space("openenv/echo_env-0.2.2").stage != "PAUSED"
    assert run_task(capsys, "cleanup", *common, "--archive", "--yes")[0] == 0
    assert release.hub.space("openenv/echo_env-0.2.2").stage == "PAUSED"
    assert run_task(capsys, "cleanup", *common, "--archive", "--delete")[0] == 2

    entries = {e: Ledger.load(tmp_path / "ledger.json", config.as_json()).env(e) for e in ("echo_env", "broken_env", "slow_env")}
    assert entries["echo_env"].get("promote").data["decision"] == "promoted"
    assert entries["slow_env"].get("promote").data["reason"].startswith("INCONCLUSIVE: ")
    assert entries["echo_env"].get("collection").data["added"] is True
    assert entries["broken_env"].get("pin").data["decision"] == "pinned"
    assert entries["echo_env"].get("cleanup").data["action"] == "archive"
    assert entries["broken_env"].get("cleanup") is None


def test_a_held_reason_names_each_distinct_cause_once() -> None:
    from releaselib.ledger.step_records import held_reason
    from releaselib.publish.promote import Promotion

    fail = [Promotion("textarena_env", "openenv/textarena_env-0.2.2", f"openenv/{t}", "held", "FAIL: POST /reset answered 500") for t in ("sudoku", "wordle")]
    assert held_reason(fail, []) == "FAIL: POST /reset answered 500"
    missing = [
        Promotion("textarena_env", "c", "openenv/sudoku", "promoted"),
        Promotion("textarena_env", "c", "openenv/wordle", "held", "openenv/wordle does not exist; pass --create-missing to create it", create=True),
    ]
    assert held_reason(missing, ["openenv/wordle"]) == "canonical openenv/wordle missing, pass --create-missing"


def test_the_briefing_is_rebuilt_from_the_whole_history(tmp_path: Path) -> None:
    """Run 1 pinned a FAIL; run 2 restaged it (its records went to the history) and it FAILed
    again; a PASS held for a missing canonical gets no evidence row; commands carry every flag."""
    from releaselib.ledger.report import PROBE_REMEDY, build_report, render_briefing

    config = release_config(tmp_path / "OpenEnv", tmp_path / "my staging", ref="main", ref_reason="t", hub_endpoint="https://hub.example")
    ledger = Ledger.load(tmp_path / "elsewhere.json", config.as_json())
    ledger.start_run(flags=["--timeout", "5"], envs=["broken_env", "maze_env"])
    for env in ("broken_env", "maze_env"):
        ledger.record(env, "stage", manifest_hash="h1", space_id=f"openenv/{env}-0.2.2")
        ledger.record(env, "deploy", space_id=f"openenv/{env}-0.2.2", head="c1")
    ledger.record("broken_env", "verify", outcome="FAIL", reason="POST /reset answered 500", commit="c1", our_error=False)
    ledger.record("broken_env", "pin", decision="pinned", changed=True, diff="-old\n+new <0.2.2")
    ledger.record("maze_env", "verify", status="failed", outcome="INCONCLUSIVE", reason="TLS: certificate not trusted; set SSL_CERT_FILE", commit="c1", our_error=True)
    first = build_report(config, ledger)
    assert [(i["env"], i["our_error"], i["remedy"]) for i in first["inconclusive"]] == [("maze_env", True, PROBE_REMEDY)]
    assert "- maze_env (run 1): INCONCLUSIVE: TLS: certificate not trusted" in render_briefing(first)
    ledger.start_run(flags=["--timeout", "5", "--create-missing"], envs=["broken_env", "maze_env"])
    ledger.record("broken_env", "stage", manifest_hash="h2", space_id="openenv/broken_env-0.2.2")
    ledger.invalidate_from("broken_env", "deploy")
    ledger.record("broken_env", "deploy", space_id="openenv/broken_env-0.2.2", head="c2")
    ledger.record("broken_env", "verify", outcome="FAIL", reason="POST /reset answered 500", commit="c2", our_error=False)
    ledger.record("broken_env", "pin", decision="pinned", changed=False, diff="")
    ledger.record("maze_env", "verify", outcome="PASS", reason="", commit="c1", our_error=False)
    ledger.record("maze_env", "promote", decision="held", reason="canonical openenv/maze_env missing, pass --create-missing", missing=["openenv/maze_env"], targets=[])

    report = build_report(config, ledger)
    envs = {e["env"]: e for e in report["envs"]}
    assert envs["broken_env"]["decision"] == "pinned" and envs["broken_env"]["evidence"]["run"] == 2
    assert envs["broken_env"]["pin_diff"] == "-old\n+new <0.2.2" and envs["broken_env"]["pin_run"] == 1
    assert envs["maze_env"]["decision_reason"] == "canonical openenv/maze_env missing, pass --create-missing"
    assert report["evidence"] == [] and [f["env"] for f in report["failed"]] == ["broken_env"]
    assert report["inconclusive"] == []
    release, status, report_line = report["reproduce"]
    assert release.startswith("openenv-release release --repo ") and f"--staging-dir '{config.staging_dir}'" in release
    assert f"--ledger {tmp_path / 'elsewhere.json'}" in release and "--timeout 5 --create-missing" in release
    assert "--hub-endpoint https://hub.example" in status and "--hub-endpoint https://hub.example" in report_line  # report lists the Hub too
    text = render_briefing(report)
    assert "- decision: held, canonical openenv/maze_env missing, pass --create-missing" in text
    assert "pinned below 0.2.2 by run 1, still in the checkout" in text
    assert "No canonical Space holds a candidate of this release." in text


def test_from_a_step_the_ledger_never_reached_is_a_usage_error(tmp_path: Path) -> None:
    from releaselib.errors import UsageError
    from releaselib.records import EnvSpec
    from releaselib.release import Release, ReleaseOptions

    config = release_config(tmp_path, tmp_path / "s", ref="main", ref_reason="t")
    ledger = Ledger.load(tmp_path / "ledger.json", config.as_json())
    release = Release(config, None, None, None, ledger, ReleaseOptions(from_step="promote"))  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="nothing to redo: the ledger has no promote records") as caught:
        release.run([EnvSpec("echo_env", tmp_path / "envs" / "echo_env", None, None, True, "")])
    assert caught.value.exit_code == 2 and ledger.runs() == []


def test_an_inconclusive_line_names_its_reason_even_for_a_promoted_env(tmp_path: Path) -> None:
    from releaselib.ledger.report import build_report, render_briefing

    config = release_config(tmp_path, tmp_path, ref="main", ref_reason="t")
    ledger = Ledger.load(tmp_path / "ledger.json", config.as_json())
    ledger.start_run(flags=[], envs=["textarena_env"])
    ledger.record("textarena_env", "verify", outcome="PASS", commit="c1")
    at = ledger.env("textarena_env").get("verify").at
    ledger.record("textarena_env", "promote", decision="promoted", targets=["openenv/sudoku", "openenv/wordle"], verified_at=at)
    ledger.record("textarena_env", "verify", status="failed", outcome="INCONCLUSIVE", commit="c2", reason="PAUSED: the candidate is paused", our_error=True)
    text = render_briefing(build_report(config, ledger))
    line = next(x for x in text.splitlines() if x.startswith("- textarena_env (run 1): "))
    assert line.startswith("- textarena_env (run 1): INCONCLUSIVE: PAUSED: the candidate is paused. Remedy: "), line
    assert "into openenv/sudoku" not in line


def test_the_boards_cleanup_action_is_the_command_that_archives(tmp_path: Path) -> None:
    """``cleanup --archive`` without ``--yes`` only prints a plan: the board prints the one that acts."""
    from releaselib.ledger.status import board

    config = release_config(tmp_path, tmp_path, ref="main", ref_reason="t")
    ledger = Ledger.load(tmp_path / "ledger.json", config.as_json())
    space = "openenv/echo_env-0.2.2"
    ledger.record("echo_env", "stage", manifest_hash="h", space_id=space)
    ledger.record("echo_env", "deploy", space_id=space, head="c1")
    ledger.record("echo_env", "verify", outcome="PASS", commit="c1", checks={"POST /reset": 200, "POST /step": 200})
    ledger.record("echo_env", "promote", decision="promoted", targets=["openenv/echo_env"])
    ledger.record("echo_env", "collection", added=True)
    ledger.record("echo_env", "pin", decision="leave", changed=False)
    (row,) = board(ledger, {space: "RUNNING"}, config)
    assert row.next_action.startswith("openenv-release cleanup ") and row.next_action.endswith(" --archive --yes"), row.next_action


def test_a_briefing_written_before_promote_claims_no_canonical_decision(tmp_path: Path) -> None:
    """Before ``promote`` has decided on the standing verdict, the canonical columns say "not
    promoted yet": never held, nor what a promotion of an earlier verdict recorded."""
    from releaselib.ledger.report import build_report, render_briefing

    config = release_config(tmp_path, tmp_path, ref="main", ref_reason="t")
    ledger = Ledger.load(tmp_path / "ledger.json", config.as_json())
    for env, outcome in (("echo_env", "PASS"), ("broken_env", "FAIL"), ("textarena_env", "PASS")):
        ledger.record(env, "stage", manifest_hash="h", space_id=f"openenv/{env}-0.2.2")
        ledger.record(env, "deploy", space_id=f"openenv/{env}-0.2.2", head="c1")
        ledger.record(env, "verify", outcome=outcome, commit="c1", reason="" if outcome == "PASS" else "POST /reset answered 500")
    at = ledger.env("textarena_env").get("verify").at
    ledger.record("textarena_env", "promote", decision="promoted", targets=["openenv/sudoku", "openenv/wordle"], verified_at=at)
    ledger.record("textarena_env", "verify", outcome="FAIL", commit="c1", reason="POST /step answered 500")  # a new verdict: promote is due again

    report = build_report(config, ledger)
    envs = {e["env"]: e for e in report["envs"]}
    for env in ("echo_env", "broken_env", "textarena_env"):
        assert (envs[env]["decision"], envs[env]["canonical_targets"]) == ("not promoted yet", []), env
    assert envs["echo_env"]["decision_reason"] == "promote has not run on this PASS"
    assert report["counts"]["decision"] == {"not promoted yet": 3}
    text = render_briefing(report)
    assert "| echo_env | `openenv/echo_env-0.2.2` | `c1` | PASS | not promoted yet | - |" in text
    assert "### textarena_env: FAIL, not promoted yet" in text and "held" not in text
    # what the earlier promotion did is still told, as a fact about the canonicals, with its warning
    (flip,) = report["evidence"]
    assert flip["targets"] == ["openenv/sudoku", "openenv/wordle"] and "now fails" in flip["warning"]
