"""Promote against the embedded Hub: canonical targets, verified trees only, idempotent."""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import CommitOperationAdd, SpaceCard

from releaselib.edit.readme import runtime_url
from releaselib.publish.canonical_targets import canonical_targets
from releaselib.publish.promote import promote
from releaselib.records import Verdict
from tests.helpers import builtin_registry
from tests.release_world import make_release, writes


def by_target(decisions):
    return {d.target: d for d in decisions}


def test_canonical_targets_come_from_the_plugin_or_the_env_name_and_the_listing(tmp_path: Path) -> None:

    registry = builtin_registry()
    listing = {"openenv/repl_env", "openenv/sudoku", "openenv/echo_env"}
    repl = canonical_targets(registry, "repl_env", "openenv", listing)
    assert [(t.space_id, t.exists) for t in repl] == [("openenv/repl", False)]  # never openenv/repl_env
    textarena = canonical_targets(registry, "textarena_env", "openenv", listing)
    assert [(t.space_id, dict(t.variables), t.exists) for t in textarena] == [
        ("openenv/sudoku", {"TEXTARENA_ENV_ID": "Sudoku-v0"}, True),
        ("openenv/wordle", {"TEXTARENA_ENV_ID": "Wordle-v0"}, False),
    ]
    assert [(t.space_id, t.exists) for t in canonical_targets(registry, "fresh_env", "acme", listing)] == [("acme/fresh_env", False)]


def test_only_passing_candidates_are_published_with_only_their_space_specific_parts_changed(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path)
    heads = {s: release.head(s) for s in ("openenv/repl_env", "openenv/textarena_env", "openenv/broken_env", "openenv/slow_env")}

    decisions = promote(release.hub, release.config, release.verdicts, release.registry)

    status = {d.target: d.status for d in decisions}
    assert status == {
        "openenv/broken_env": "held", "openenv/echo_env": "promoted", "openenv/repl": "promoted",
        "openenv/slow_env": "held", "openenv/sudoku": "promoted", "openenv/wordle": "promoted",
    }
    held = by_target(decisions)
    assert held["openenv/broken_env"].reason == "FAIL: POST /reset answered 500"
    assert held["openenv/slow_env"].reason.startswith("INCONCLUSIVE: POST /reset timed out")
    assert localhub.counters().commits == 4
    assert {s: release.head(s) for s in heads} == heads  # the decoys and the held envs' canonicals
    for env, target in (("echo_env", "openenv/echo_env"), ("repl_env", "openenv/repl"), ("textarena_env", "openenv/sudoku"), ("textarena_env", "openenv/wordle")):
        candidate = release.candidate(env)
        published, verified = release.tree(target), release.tree(candidate)
        assert set(published) == set(verified) | {"old.txt"}  # the canonical's own file is kept
        assert {p: b for p, b in published.items() if p not in ("README.md", "old.txt")} == {p: b for p, b in verified.items() if p != "README.md"}
        card = verified["README.md"].decode()
        assert card.count(candidate) >= 2 and "Runtime URL: " + runtime_url(candidate) in card
        expected = SpaceCard(card.replace(runtime_url(candidate), runtime_url(target)).replace(candidate, target))
        merged = SpaceCard(published["README.md"].decode())
        assert merged.data.to_dict() == expected.data.to_dict()  # every field the release writes
        assert merged.text.strip() == "# 0.2.1"  # the canonical's own body
        assert release.api.space_info(target).private is False  # the canonical keeps its visibility
        assert held[target].commit == release.verdicts[env].commit
    variables = {s: release.hub.variables(s) for s in ("openenv/sudoku", "openenv/wordle")}
    assert variables == {"openenv/sudoku": {"TEXTARENA_ENV_ID": "Sudoku-v0"}, "openenv/wordle": {"TEXTARENA_ENV_ID": "Wordle-v0"}}
    assert held["openenv/sudoku"].variables == ("TEXTARENA_ENV_ID",) and held["openenv/wordle"].variables == ()


def test_a_pass_recorded_before_the_candidates_latest_commit_does_not_count(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, {"echo_env": ("PASS", ">=0.2.0")}, canonicals=("openenv/echo_env",))
    before = release.head("openenv/echo_env")
    release.api.create_commit(release.candidate("echo_env"), [CommitOperationAdd("fix.txt", b"x")], commit_message="fix", repo_type="space")
    (decision,) = promote(release.hub, release.config, release.verdicts, release.registry)
    assert decision.status == "held" and "verify it again" in decision.reason
    assert release.head("openenv/echo_env") == before
    unverified = promote(release.hub, release.config, {}, release.registry, envs=["echo_env"])
    assert [(d.status, d.reason) for d in unverified] == [("held", "not verified")]


def test_missing_canonicals_are_created_only_with_create_missing(localhub, tmp_path: Path) -> None:
    envs = {"fresh_env": ("PASS", ">=0.2.0"), "textarena_env": ("PASS", ">=0.2.0")}
    release = make_release(localhub, tmp_path, envs, canonicals=("openenv/sudoku",))
    first = by_target(promote(release.hub, release.config, release.verdicts, release.registry))
    assert first["openenv/fresh_env"].status == "held" and "--create-missing" in first["openenv/fresh_env"].reason
    assert first["openenv/wordle"].status == "held" and first["openenv/sudoku"].status == "promoted"
    assert not release.api.repo_exists("openenv/wordle", repo_type="space")

    plan = by_target(promote(release.hub, release.config, release.verdicts, release.registry, create_missing=True, dry_run=True))
    assert plan["openenv/wordle"].status == "planned" and plan["openenv/wordle"].create
    assert "create it as a public Docker Space" in plan["openenv/wordle"].reason  # the plan says what it creates
    assert not release.api.repo_exists("openenv/wordle", repo_type="space")

    second = by_target(promote(release.hub, release.config, release.verdicts, release.registry, create_missing=True))
    assert second["openenv/fresh_env"].create and second["openenv/fresh_env"].status == "promoted"
    for created in ("openenv/wordle", "openenv/fresh_env"):  # canonicals are the release's public face
        info = release.api.space_info(created)
        assert info.private is False and info.sdk == "docker"
        assert second[created].reason == f"created {created} as a public Docker Space"
    assert release.config.private is True  # while the candidates stay private
    assert release.hub.variables("openenv/wordle") == {"TEXTARENA_ENV_ID": "Wordle-v0"}
    assert not release.api.repo_exists("openenv/textarena_env", repo_type="space")


def test_dry_run_plans_without_writing(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, {"textarena_env": ("PASS", ">=0.2.0")}, canonicals=("openenv/sudoku", "openenv/wordle"))
    plan = by_target(promote(release.hub, release.config, release.verdicts, release.registry, dry_run=True))
    sudoku = plan["openenv/sudoku"]
    assert sudoku.status == "planned" and sudoku.variables == ("TEXTARENA_ENV_ID",)
    assert "Dockerfile" in sudoku.upload and sudoku.delete == () and sudoku.kept == ("old.txt",)
    assert writes(localhub) == {} and localhub.counters().commits == 0


def test_a_candidate_readme_that_is_not_this_releases_card_is_not_rebuilt(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, {"echo_env": ("PASS", ">=0.2.0")}, canonicals=("openenv/echo_env",))
    candidate = release.candidate("echo_env")
    edited = release.api.create_commit(candidate, [CommitOperationAdd("README.md", b"---\ntitle: hand-edited\n---\n")], commit_message="edit", repo_type="space")
    verdicts = {"echo_env": Verdict("echo_env", candidate, "PASS", edited.oid)}
    (decision,) = promote(release.hub, release.config, verdicts, release.registry)
    assert decision.status == "failed" and "README.md is not the card release 0.2.2" in decision.reason
    assert localhub.counters().commits == 1  # the hand edit only
