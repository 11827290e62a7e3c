"""The versioned collection: reuse by title or alias slug, metadata re-synced, explicit items."""

from __future__ import annotations

from pathlib import Path

import pytest

from releaselib.errors import UsageError
from releaselib.publish.collection import GLOBAL_TITLE, description, sync_collection
from tests.helpers import offline
from tests.release_world import make_release, writes

ENVS = {"echo_env": ("PASS", ">=0.2.0"), "textarena_env": ("PASS", ">=0.2.0"), "broken_env": ("FAIL", None)}
TITLE = "OpenEnv Environment Hub 0.2.2"


def test_the_release_s_own_collection_is_reused_by_title_and_its_visibility_resynced(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, ENVS, canonicals=())
    text = description(release.config)
    old = release.api.create_collection(TITLE, namespace="openenv", private=False, description=text)
    release.api.add_collection_item(old.slug, "openenv/echo_env-0.2.2", "space")
    (synced,) = sync_collection(release.hub, release.config, release.verdicts, release.registry)
    assert (synced.slug, synced.created, synced.metadata) == (old.slug, False, ("private",))
    assert synced.present == ("openenv/echo_env-0.2.2",) and synced.added == ("openenv/textarena_env-0.2.2",)
    collection = release.api.get_collection(old.slug)
    assert collection.private is True and collection.description == text
    assert [i.item_id for i in collection.items] == ["openenv/echo_env-0.2.2", "openenv/textarena_env-0.2.2"]


def test_a_hand_made_collection_under_the_release_s_title_is_not_adopted(localhub, tmp_path: Path) -> None:
    """Found by an attack: a public collection someone made by hand with the versioned title was
    adopted, made private and its description replaced."""
    release = make_release(localhub, tmp_path, ENVS, canonicals=())
    old = release.api.create_collection(TITLE, namespace="openenv", private=False, description="HAND MADE")
    with pytest.raises(UsageError, match="not this release's collection"):
        sync_collection(release.hub, release.config, release.verdicts, release.registry)
    collection = release.api.get_collection(old.slug)
    assert (collection.private, collection.description, collection.items) == (False, "HAND MADE", [])


def test_an_alias_slug_resolves_to_the_canonical_slug_and_space_ids_are_explicit(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, ENVS, canonicals=())
    own = release.api.create_collection(TITLE, namespace="openenv", private=True, description=description(release.config))
    alias = "openenv/old-title-" + own.slug.rpartition("-")[2]
    wanted = ["openenv/echo_env-0.2.2", "openenv/broken_env-0.2.2", "openenv/nope-0.2.2"]
    (synced,) = sync_collection(release.hub, release.config, release.verdicts, release.registry, space_ids=wanted, slug=alias)
    assert synced.slug == own.slug and synced.added == ("openenv/echo_env-0.2.2",)
    assert dict(synced.skipped) == {
        "openenv/nope-0.2.2": "no verdict for it in this release",
        "openenv/broken_env-0.2.2": "FAIL: POST /reset answered 500",
    }
    assert [i.item_id for i in release.api.get_collection(own.slug).items] == ["openenv/echo_env-0.2.2"]


def foreign_collections(release) -> dict[str, str]:
    """The public global collection, another owner's versioned one, and a renamed one: slugs."""
    made = {
        "global": release.api.create_collection(GLOBAL_TITLE, namespace="openenv", private=False, description="all of them"),
        "other-owner": release.api.create_collection(TITLE, namespace="acme", private=False, description="acme's"),
        "other-title": release.api.create_collection("Renamed", namespace="openenv", private=False, description="kept"),
    }
    return {name: c.slug for name, c in made.items()}


@pytest.mark.parametrize("which", ["global", "other-owner", "other-title"])
def test_a_slug_that_is_not_the_release_collection_is_refused_and_untouched(localhub, tmp_path: Path, which: str) -> None:
    release = make_release(localhub, tmp_path, ENVS, canonicals=())
    slug = foreign_collections(release)[which]
    localhub.reset_counters()
    with pytest.raises(UsageError, match=f"--collection-slug {slug}: .* is not this release's collection"):
        sync_collection(release.hub, release.config, release.verdicts, release.registry, slug=slug)
    assert writes(localhub) == {}


def test_the_versioned_collection_of_a_namespace_not_the_tokens_is_refused(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, ENVS, canonicals=())
    config = release.config.with_(collection_namespace="acme")
    acme = release.api.create_collection(TITLE, namespace="acme", private=False, description=description(config))
    localhub.reset_counters()
    with pytest.raises(UsageError, match="--collection-namespace acme: not the token's own namespace \\(openenv\\)"):
        sync_collection(release.hub, config, release.verdicts, release.registry)
    assert writes(localhub) == {} and release.api.get_collection(acme.slug).items == []


def test_a_foreign_collection_is_planned_then_written_only_with_confirm_and_keeps_its_settings(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, ENVS, canonicals=())
    slug = foreign_collections(release)["global"]
    localhub.reset_counters()
    (plan,) = sync_collection(release.hub, release.config, release.verdicts, release.registry, slug=slug, foreign=True)
    assert plan.planned and plan.added == ("openenv/echo_env-0.2.2", "openenv/textarena_env-0.2.2")
    assert writes(localhub) == {} and release.api.get_collection(slug).items == []
    (done,) = sync_collection(release.hub, release.config, release.verdicts, release.registry, slug=slug, foreign=True, confirm=True)
    assert not done.planned and done.metadata == ()
    collection = release.api.get_collection(slug)
    assert [i.item_id for i in collection.items] == list(plan.added)
    assert (collection.private, collection.description) == (False, "all of them")


def test_dry_run_prints_a_synthetic_slug_and_writes_nothing(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, ENVS, canonicals=())
    (plan,) = sync_collection(release.hub, release.config, release.verdicts, release.registry, dry_run=True)
    assert plan.slug == "openenv/openenv-environment-hub-0-2-2-dry-run" and plan.created
    assert plan.added == ("openenv/echo_env-0.2.2", "openenv/textarena_env-0.2.2")
    assert writes(localhub) == {} and list(release.api.list_collections(owner="openenv")) == []


def test_the_global_collection_gets_the_canonicals_only_when_asked_and_confirmed(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, ENVS, canonicals=("openenv/echo_env", "openenv/sudoku", "openenv/broken_env"))
    _, planned = sync_collection(release.hub, release.config, release.verdicts, release.registry, include_global=True)
    assert planned.planned and planned.added == ("openenv/echo_env", "openenv/sudoku")
    assert GLOBAL_TITLE not in {c.title for c in release.api.list_collections(owner="openenv")}
    versioned, global_ = sync_collection(release.hub, release.config, release.verdicts, release.registry, include_global=True, confirm=True)
    assert global_.title == GLOBAL_TITLE and global_.added == ("openenv/echo_env", "openenv/sudoku")
    assert "openenv/echo_env" not in versioned.added
    localhub.reset_counters()
    _, again = sync_collection(release.hub, release.config, release.verdicts, release.registry, include_global=True, confirm=True)
    assert not again.changed and writes(localhub) == {}


def test_the_collection_task_refuses_a_foreign_slug_then_plans_and_adds_with_the_flags(localhub, tmp_path: Path, monkeypatch, capsys) -> None:
    from openenv_release.cli import program
    from releaselib.ledger.ledger import Ledger

    release = make_release(localhub, tmp_path, ENVS, canonicals=())
    slug = foreign_collections(release)["global"]
    ledger = Ledger.load(tmp_path / "ledger.json", release.config.as_json())
    for v in release.verdicts.values():
        ledger.record(v.env, "verify", space=v.space_id, outcome=v.outcome, commit=v.commit, reason=v.reason)
    for key, value in {**localhub.client_env(), **offline(tmp_path)}.items():
        monkeypatch.setenv(key, value)
    common = ["openenv-release", "collection", "--repo", str(release.config.repo), "--ledger", str(tmp_path / "ledger.json"), "--version", "0.2.2", "--collection-slug", slug]

    def run(*more: str) -> int:
        try:
            program.run([*common, *more])
        except SystemExit as exc:
            return int(exc.code or 0)
        return 0

    assert run() == 2 and f"error: --collection-slug {slug}: " in capsys.readouterr().err
    assert run("--foreign-collection") == 0 and "planned only, pass --yes" in capsys.readouterr().out
    assert release.api.get_collection(slug).items == []
    assert run("--foreign-collection", "--yes") == 0
    assert [i.item_id for i in release.api.get_collection(slug).items] == ["openenv/echo_env-0.2.2", "openenv/textarena_env-0.2.2"]


def test_a_slug_the_hub_does_not_know_is_a_usage_error_naming_it(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, ENVS, canonicals=())
    localhub.reset_counters()
    for foreign in (False, True):
        with pytest.raises(UsageError, match="--collection-slug openenv/no-such-collection-0123: the Hub has no collection") as refused:
            sync_collection(release.hub, release.config, release.verdicts, release.registry, slug="openenv/no-such-collection-0123", foreign=foreign)
        assert refused.value.exit_code == 2
    assert writes(localhub) == {}
