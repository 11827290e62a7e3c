"""``rollback`` on a healthy release: every canonical goes back to the commit's tree and the
variables recorded before the promotion, in one new commit each; the plan changes nothing; a
second rollback changes nothing and says so."""

from __future__ import annotations

import json
from pathlib import Path

from huggingface_hub import CommitOperationAdd

from openenv_release.cli import program
from releaselib.ledger.ledger import Ledger
from tests.release_world import make_release

ENVS = {"echo_env": ("PASS", ">=0.2.0"), "textarena_env": ("PASS", ">=0.2.0")}
CANONICALS = ("openenv/echo_env", "openenv/sudoku", "openenv/wordle")


def run_task(capsys, *argv: str) -> tuple[int, str, str]:
    """The console script's Program in this process: exit code, stdout, stderr."""
    try:
        program.run(["openenv-release", *argv])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_rollback_restores_every_canonical_once(localhub, tmp_path: Path, monkeypatch, capsys) -> None:
    release = make_release(localhub, tmp_path, ENVS, canonicals=CANONICALS)
    api = release.api
    api.create_commit("openenv/echo_env", [CommitOperationAdd("assets/board.png", b"\x89PNG")], commit_message="own", repo_type="space")
    api.add_space_variable("openenv/echo_env", "MODE", "canonical")
    before = {s: (release.head(s), release.tree(s), {k: v.value for k, v in api.get_space_variables(s).items()}) for s in CANONICALS}
    ledger_path = tmp_path / "ledger.json"
    ledger = Ledger.load(ledger_path, release.config.as_json())
    for v in release.verdicts.values():
        ledger.record(v.env, "verify", outcome=v.outcome, space_id=v.space_id, commit=v.commit)
    for key, value in {**localhub.client_env(), "OPENENV_RELEASE_REMOTE": str(tmp_path / "no-remote")}.items():
        monkeypatch.setenv(key, value)
    common = ("--repo", str(release.config.repo), "--ledger", str(ledger_path), "--version", "0.2.2")

    code, _, err = run_task(capsys, "rollback", *common, "--yes")
    assert code == 0 and "nothing to roll back" in _ + err  # nothing promoted yet
    assert run_task(capsys, "promote", *common)[0] == 0
    promoted = {s: release.head(s) for s in CANONICALS}
    assert all(promoted[s] != before[s][0] for s in CANONICALS)
    assert api.get_space_variables("openenv/sudoku")["TEXTARENA_ENV_ID"].value == "Sudoku-v0"

    for plan_only in (("--dry-run", "--yes"), ()):  # a plan, with or without --dry-run, writes nothing
        commits = localhub.counters().commits
        code, stdout, _ = run_task(capsys, "rollback", *common, *plan_only, "--json")
        plan = json.loads(stdout)["restores"]
        assert code == 0 and {r["target"]: r["status"] for r in plan} == dict.fromkeys(CANONICALS, "planned")
        assert localhub.counters().commits == commits and {s: release.head(s) for s in CANONICALS} == promoted
    sudoku = next(r for r in plan if r["target"] == "openenv/sudoku")
    assert sudoku["variables"] == ["TEXTARENA_ENV_ID"] and sudoku["previous"] == before["openenv/sudoku"][0]

    code, stdout, _ = run_task(capsys, "rollback", *common, "--yes", "--json")
    done = {r["target"]: r for r in json.loads(stdout)["restores"]}
    assert code == 0 and {t: r["status"] for t, r in done.items()} == dict.fromkeys(CANONICALS, "restored")
    for space_id, (head, tree, variables) in before.items():
        assert release.head(space_id) == done[space_id]["commit"] not in (head, promoted[space_id])
        assert release.tree(space_id) == tree
        assert {k: v.value for k, v in api.get_space_variables(space_id).items()} == variables
    recorded = Ledger.load(ledger_path, release.config.as_json()).env("textarena_env").get("rollback")
    assert recorded is not None and {r["target"] for r in recorded.data["restores"]} == {"openenv/sudoku", "openenv/wordle"}

    commits = localhub.counters().commits
    code, stdout, _ = run_task(capsys, "rollback", *common, "--yes")
    assert code == 0 and "nothing to roll back: every canonical already holds" in stdout
    assert localhub.counters().commits == commits

    code, _, err = run_task(capsys, "rollback", *common, "--env", "broken_env", "--yes")
    assert code == 2 and "--env broken_env" in err and "nothing to restore" in err


def _setup(localhub, tmp_path: Path, monkeypatch) -> tuple:
    release = make_release(localhub, tmp_path, ENVS, canonicals=CANONICALS)
    ledger_path = tmp_path / "ledger.json"
    ledger = Ledger.load(ledger_path, release.config.as_json())
    for v in release.verdicts.values():
        ledger.record(v.env, "verify", outcome=v.outcome, space_id=v.space_id, commit=v.commit)
    for key, value in {**localhub.client_env(), "OPENENV_RELEASE_REMOTE": str(tmp_path / "no-remote")}.items():
        monkeypatch.setenv(key, value)
    return release, ledger_path, ("--repo", str(release.config.repo), "--ledger", str(ledger_path), "--version", "0.2.2")


def test_rollback_keeps_what_changed_after_the_promotion(localhub, tmp_path: Path, monkeypatch, capsys) -> None:
    release, _, common = _setup(localhub, tmp_path, monkeypatch)
    api = release.api
    before = {s: release.tree(s) for s in CANONICALS}
    wordle_before = {k: v.value for k, v in api.get_space_variables("openenv/wordle").items()}
    assert run_task(capsys, "promote", *common)[0] == 0
    promoted_echo = release.head("openenv/echo_env")
    api.create_commit("openenv/echo_env", [CommitOperationAdd("assets/after_promo.txt", b"mine")], commit_message="maintainer", repo_type="space")
    api.add_space_variable("openenv/echo_env", "NEW_VAR", "new")
    api.add_space_variable("openenv/sudoku", "TEXTARENA_ENV_ID", "Changed-v0")  # the promotion wrote it
    api.add_space_variable("openenv/wordle", "NEW_VAR", "new")
    moved = release.head("openenv/echo_env")

    code, stdout, _ = run_task(capsys, "rollback", *common, "--yes", "--json")
    done = {r["target"]: r for r in json.loads(stdout)["restores"]}
    assert code == 1 and done["openenv/echo_env"]["status"] == "held"
    assert f"changed since the promotion: head {moved[:12]}, promoted {promoted_echo[:12]}" in done["openenv/echo_env"]["reason"]
    assert release.head("openenv/echo_env") == moved  # held: untouched
    assert done["openenv/sudoku"]["status"] == "restored" and "TEXTARENA_ENV_ID" not in done["openenv/sudoku"]["variables"]
    assert any("TEXTARENA_ENV_ID (changed since" in k for k in done["openenv/sudoku"]["kept"])
    assert api.get_space_variables("openenv/sudoku")["TEXTARENA_ENV_ID"].value == "Changed-v0"
    assert release.tree("openenv/sudoku") == before["openenv/sudoku"]
    wordle = {k: v.value for k, v in api.get_space_variables("openenv/wordle").items()}
    assert wordle == {**wordle_before, "NEW_VAR": "new"}  # a variable the promotion did not write stays

    code, stdout, _ = run_task(capsys, "rollback", *common, "--env", "echo_env", "--yes", "--force", "--json")
    (echo,) = json.loads(stdout)["restores"]
    assert code == 0 and echo["status"] == "restored"
    assert release.tree("openenv/echo_env") == {**before["openenv/echo_env"], "assets/after_promo.txt": b"mine"}
    assert api.get_space_variables("openenv/echo_env")["NEW_VAR"].value == "new"


def test_a_token_in_a_canonical_variable_is_recorded_by_name_only(localhub, tmp_path: Path, monkeypatch, capsys) -> None:
    release, ledger_path, common = _setup(localhub, tmp_path, monkeypatch)
    token = "hf_" + "Ab3" * 12
    release.api.add_space_variable("openenv/echo_env", "LEGACY_TOKEN", token)
    code, stdout, _ = run_task(capsys, "promote", *common, "--dry-run", "--json")
    assert code == 0 and token not in stdout
    planned = next(p for p in json.loads(stdout)["promotions"] if p["target"] == "openenv/echo_env")
    assert planned["before"]["withheld"] == ["LEGACY_TOKEN"] and "LEGACY_TOKEN" not in planned["before"]["variables"]
    code, stdout, err = run_task(capsys, "promote", *common, "--yes")
    assert code == 0 and token not in stdout + err and token not in ledger_path.read_text()
    code, stdout, _ = run_task(capsys, "rollback", *common, "--env", "echo_env", "--yes", "--json")
    (echo,) = json.loads(stdout)["restores"]
    assert code == 0 and echo["status"] == "restored" and any("LEGACY_TOKEN (recorded by name only" in k for k in echo["kept"])
    assert release.api.get_space_variables("openenv/echo_env")["LEGACY_TOKEN"].value == token
