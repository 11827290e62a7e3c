"""Promote's plan is its run: a dry run and the real run come from one computation, so what
``--dry-run`` names (uploads, deletions, the canonical's own files kept, variables, held) is
what the run writes. And before it writes, promote records each canonical's state."""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import CommitOperationAdd

from releaselib.ledger.ledger import Ledger
from releaselib.ledger.step_records import baselines
from releaselib.publish.promote import promote
from releaselib.publish.steps import promote_step
from tests.release_world import make_release

ECHO = "openenv/echo_env"
FOREIGN = {
    "assets/leaderboard.png": b"\x89PNG not really",  # the canonical's own
    "envs/echo_env/removed_module.py": b"# shipped by 0.2.1\n",  # an earlier release's
}
PLANNED = ("upload", "delete", "kept", "variables", "create", "commit", "candidate", "target")


def test_the_dry_run_plan_is_what_the_run_does(localhub, tmp_path: Path) -> None:
    envs = {"echo_env": ("PASS", ">=0.2.0"), "textarena_env": ("PASS", ">=0.2.0")}
    release = make_release(localhub, tmp_path, envs, canonicals=(ECHO, "openenv/sudoku", "openenv/wordle"))
    own = [CommitOperationAdd(path, content) for path, content in FOREIGN.items()]
    release.api.create_commit(ECHO, own, commit_message="the canonical's own", repo_type="space")
    args = (release.hub, release.config, release.verdicts, release.registry)

    for delete in (False, True):
        plan = promote(*args, dry_run=True, delete=delete)
        before = {p.target: release.tree(p.target) for p in plan}
        done = promote(*args, delete=delete)
        assert [(p.target, "promoted" if p.status == "planned" else p.status) for p in plan] == [(d.target, d.status) for d in done]
        for p, d in zip(plan, done, strict=True):
            assert {k: p.as_json()[k] for k in PLANNED} == {k: d.as_json()[k] for k in PLANNED}
            assert p.reason == d.reason
            after = release.tree(p.target)
            changed = {path for path in before[p.target].keys() | after.keys() if before[p.target].get(path) != after.get(path)}
            assert changed == (set(p.upload) | set(p.delete) if p.status == "planned" else set())
            assert all(after[k] == before[p.target][k] for k in p.kept)
        echo = next(p for p in plan if p.target == ECHO)
        assert echo.kept == ("assets/leaderboard.png", "old.txt") and echo.delete == ("envs/echo_env/removed_module.py",)
        assert echo.status == ("planned" if delete else "held")
        sudoku = next(p for p in plan if p.target == "openenv/sudoku")
        assert sudoku.status == ("current" if delete else "planned")  # the first run set all
        assert sudoku.variables == (() if delete else ("TEXTARENA_ENV_ID",))  # wordle had it
    assert release.api.get_space_variables("openenv/sudoku")["TEXTARENA_ENV_ID"].value == "Sudoku-v0"


def test_promote_records_each_canonicals_state_before_it_writes(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, {"echo_env": ("PASS", ">=0.2.0")}, canonicals=(ECHO,))
    release.api.add_space_variable(ECHO, "MODE", "canonical")
    release.api.add_space_secret(ECHO, "OPENAI_API_KEY", "sk-not-a-real-key")
    previous = release.head(ECHO)
    ledger = Ledger.load(tmp_path / "ledger.json", release.config.as_json())
    for env, verdict in release.verdicts.items():
        ledger.record(env, "verify", outcome=verdict.outcome, space_id=verdict.space_id, commit=verdict.commit)

    planned = promote_step(release.hub, release.config, ledger, release.registry, dry_run=True)
    assert planned[0].status == "planned" and baselines(ledger, "echo_env") == {}  # a plan records nothing
    (done,) = promote_step(release.hub, release.config, ledger, release.registry)
    assert done.status == "promoted" and done.pushed != previous
    recorded = baselines(ledger, "echo_env")[ECHO]
    assert recorded["head"] == previous and recorded["variables"] == {"MODE": "canonical"}
    assert recorded["secrets"] == ["OPENAI_API_KEY"] and recorded["hardware"] == "cpu-basic"
    entry = ledger.env("echo_env")
    assert entry.get("baseline").at < entry.get("promote").at  # type: ignore[union-attr]
    assert ledger.env("echo_env").get("promote").data["promotions"][0]["before"]["head"] == previous  # type: ignore[union-attr]

    # the release's own later write of the canonical never becomes its baseline
    release.api.create_commit(ECHO, [CommitOperationAdd("envs/echo_env/README.md", b"edited by hand\n")], commit_message="hand edit", repo_type="space")
    (again,) = promote_step(release.hub, release.config, ledger, release.registry)
    assert again.status == "promoted" and again.before is not None and again.before.head != previous
    assert baselines(ledger, "echo_env")[ECHO]["head"] == previous


def test_two_envs_with_one_canonical_target_are_both_held(localhub, tmp_path: Path) -> None:
    envs = {"echo_env": ("PASS", ">=0.2.0"), "sudoku": ("PASS", ">=0.2.0"), "textarena_env": ("PASS", ">=0.2.0")}
    release = make_release(localhub, tmp_path, envs, canonicals=(ECHO, "openenv/sudoku", "openenv/wordle"))
    heads = {s: release.head(s) for s in ("openenv/sudoku", "openenv/wordle")}
    for chosen in (None, ["sudoku"]):  # the rule holds whichever env is asked for
        done = promote(release.hub, release.config, release.verdicts, release.registry, envs=chosen)
        held = [p for p in done if p.env in ("sudoku", "textarena_env")]
        assert held and all(p.status == "held" for p in held)
        assert all("openenv/sudoku is the canonical target of sudoku and textarena_env" in p.reason for p in held)
        assert {s: release.head(s) for s in heads} == heads  # neither wrote a commit
    assert next(p for p in promote(release.hub, release.config, release.verdicts, release.registry, dry_run=True) if p.env == "echo_env").status == "current"


def test_a_canonical_holding_a_newer_release_is_held_unless_a_downgrade_is_allowed(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, {"echo_env": ("PASS", ">=0.2.0"), "textarena_env": ("PASS", ">=0.2.0")}, canonicals=(ECHO, "openenv/sudoku", "openenv/wordle"))
    newer = b"---\ntitle: echo\nsdk: docker\ntags:\n- openenv\n- openenv-0.3.3\n- custom\n---\n# Echo 0.3.3\n"
    older = b"---\ntitle: sudoku\nsdk: docker\ntags:\n- openenv-0.2.1\n---\n# Sudoku 0.2.1\n"
    release.api.create_commit(ECHO, [CommitOperationAdd("README.md", newer)], commit_message="Promote echo_env 0.3.3", repo_type="space")
    release.api.create_commit("openenv/sudoku", [CommitOperationAdd("README.md", older)], commit_message="0.2.1", repo_type="space")
    head = release.head(ECHO)
    args = (release.hub, release.config, release.verdicts, release.registry)

    done = {p.target: p for p in promote(*args)}
    assert done[ECHO].status == "held" and "holds release 0.3.3, newer than 0.2.2: pass --allow-downgrade" in done[ECHO].reason
    assert release.head(ECHO) == head
    assert done["openenv/sudoku"].status == "promoted"  # an older release is replaced as always
    (plan,) = promote(*args, envs=["echo_env"], dry_run=True, downgrade=True)
    assert plan.status == "planned" and "README.md" in plan.upload
    (done_echo,) = promote(*args, envs=["echo_env"], downgrade=True)
    assert done_echo.status == "promoted" and release.head(ECHO) != head
