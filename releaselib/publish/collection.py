"""Keep the release's versioned collection in step with the candidates that passed.

The collection titled ``OpenEnv Environment Hub <version>`` in the collection namespace is
reused by exact title, or named with ``slug`` (an alias resolves to its canonical slug), else
created. Its visibility follows the release and its description is re-synced. Each candidate
whose PASS stands for its current head is added by Space id; one already there is left alone.

The release owns only that collection, and writes it only in the token's own namespace (its
user's or an org's). A ``slug`` naming any other (another title, another
owner, the global one) is a UsageError unless ``foreign``; then its items are planned, and
added only with ``confirm``, and its own settings are never changed. The global collection
(``OpenEnv Environment Hub``) is the same: asked for with ``include_global``, it gets the
canonical Spaces of the passing envs only with ``confirm``, its settings untouched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from huggingface_hub import Collection

from releaselib.config import ReleaseConfig
from releaselib.errors import UsageError
from releaselib.hub.client import Hub
from releaselib.plugins import PluginRegistry
from releaselib.publish.canonical_targets import canonical_targets
from releaselib.records import Verdict
from releaselib.verify.verdicts import standing_pass

GLOBAL_TITLE = "OpenEnv Environment Hub"


def versioned_title(version: str) -> str:
    return f"{GLOBAL_TITLE} {version}"


def description(config: ReleaseConfig) -> str:
    return f"OpenEnv environments verified for release {config.version} ({config.namespace})"


@dataclass(frozen=True)
class CollectionSync:
    """What syncing one collection did (or, in a dry run, would do)."""

    title: str
    slug: str
    created: bool = False
    metadata: tuple[str, ...] = ()  # the settings re-synced: "private", "description"
    added: tuple[str, ...] = ()
    present: tuple[str, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()  # (env or Space id, why it is not added)
    planned: bool = False  # nothing written: a dry run, or a write to a foreign one unconfirmed

    @property
    def changed(self) -> bool:
        return self.created or bool(self.metadata or self.added)

    def as_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "slug": self.slug,
            "created": self.created,
            "metadata": list(self.metadata),
            "added": list(self.added),
            "present": list(self.present),
            "skipped": [{"item": item, "reason": why} for item, why in self.skipped],
            "planned": self.planned,
        }


def passing_candidates(
    hub: Hub, verdicts: Mapping[str, Verdict], space_ids: Sequence[str] = ()
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(env, candidate) pairs whose PASS stands, and (env or Space id, why not) for the rest.

    With ``space_ids``, only those candidates are wanted; one without a standing PASS is skipped.
    """
    by_space = {v.space_id: v for v in verdicts.values()}
    wanted = [by_space.get(i) for i in space_ids] if space_ids else list(verdicts.values())
    passing: list[tuple[str, str]] = []
    skipped = [(i, "no verdict for it in this release") for i in space_ids if i not in by_space]
    for verdict in sorted((v for v in wanted if v is not None), key=lambda v: v.env):
        _, reason = standing_pass(hub, verdict)
        if reason is None:
            passing.append((verdict.env, verdict.space_id))
        else:
            skipped.append((verdict.space_id, reason))
    return passing, skipped


def sync_collection(
    hub: Hub,
    config: ReleaseConfig,
    verdicts: Mapping[str, Verdict],
    registry: PluginRegistry,
    *,
    space_ids: Sequence[str] = (),
    slug: str | None = None,
    include_global: bool = False,
    foreign: bool = False,
    confirm: bool = False,
    dry_run: bool = False,
) -> list[CollectionSync]:
    """Sync the versioned collection (and the global one with ``include_global``); see the
    module's docstring for what ``foreign`` and ``confirm`` allow."""
    passing, skipped = passing_candidates(hub, verdicts, space_ids)
    title = versioned_title(config.version)
    found = hub.collection(slug) if slug else _by_title(hub, config.collection_namespace, title)
    if slug and found is None:
        raise UsageError(
            f"--collection-slug {slug}: the Hub has no collection with that slug (or this "
            "token cannot see it)",
            remedy="copy the slug from the collection's URL, or leave --collection-slug out to "
            "sync the release's own collection",
        )
    items = [c for _, c in passing]
    if found is None or owned(config, found):
        if not dry_run:
            check_namespace(hub, config.collection_namespace)
        synced = [_sync(hub, config, title, found, items, skipped, dry_run, resync=True)]
    else:
        if not foreign:
            given = f"--collection-slug {slug}" if slug else f"collection {title!r}"
            raise UsageError(
                f"{given}: {found.slug} ({found.title!r}) is not this release's collection "
                f"({title!r} of {config.collection_namespace}, with the description the release "
                "writes), and the release writes only its own",
                remedy="leave --collection-slug out, or pass --foreign-collection to plan adding "
                "the candidates there (and --yes to add them)",
            )
        unconfirmed = dry_run or not confirm
        synced = [_sync(hub, config, found.title, found, items, skipped, unconfirmed)]
    if include_global:
        listing = {s.id for s in hub.list_spaces(config.namespace)}
        canonicals = [
            t.space_id
            for env, _ in passing
            for t in canonical_targets(registry, env, config.namespace, listing)
            if t.exists
        ]
        found = _by_title(hub, config.collection_namespace, GLOBAL_TITLE)
        unconfirmed = dry_run or not confirm
        synced.append(_sync(hub, config, GLOBAL_TITLE, found, canonicals, (), unconfirmed))
    return synced


def check_namespace(hub: Hub, namespace: str) -> None:
    """UsageError unless ``namespace`` is the token's own (its user's or one of its orgs')."""
    own = hub.namespaces()
    if namespace not in own:
        raise UsageError(
            f"--collection-namespace {namespace}: not the token's own namespace "
            f"({', '.join(own)}); the release writes its collection only there",
            remedy=f"pass --collection-namespace {own[0]} (or an org the token belongs to)",
        )


def owned(config: ReleaseConfig, found: Collection) -> bool:
    """True for the release's own collection: the versioned title, in the collection
    namespace (the slug is ``<owner>/<title words>-<id>``), with the description the release
    writes (a collection someone made by hand under that title is not the release's)."""
    owner = found.slug.partition("/")[0]
    return (
        owner == config.collection_namespace
        and found.title == versioned_title(config.version)
        and (found.description or "") == description(config)
    )


def _by_title(hub: Hub, namespace: str, title: str) -> Collection | None:
    """The namespace's collection with exactly ``title``, with all its items."""
    match = next((c for c in hub.collections(namespace) if c.title == title), None)
    return hub.collection(match.slug) if match is not None else None


def _sync(
    hub: Hub,
    config: ReleaseConfig,
    title: str,
    found: Collection | None,
    items: Sequence[str],
    skipped: Sequence[tuple[str, str]],
    dry_run: bool,
    *,
    resync: bool = False,
) -> CollectionSync:
    text = description(config)
    present: set[str] = set()
    metadata: tuple[str, ...] = ()
    if found is None:
        if dry_run:
            words = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
            slug = f"{config.collection_namespace}/{words}-dry-run"
        else:
            slug = hub.create_collection(
                title,
                namespace=config.collection_namespace,
                private=config.private,
                description=text,
            ).slug
    else:
        slug = found.slug
        present = {i.item_id for i in found.items if i.item_type == "space"}
        if resync:
            differs = {
                "private": found.private != config.private,
                "description": found.description != text,
            }
            metadata = tuple(key for key, changed in differs.items() if changed)
        if metadata and not dry_run:
            hub.update_collection(slug, private=config.private, description=text)
    added = tuple(i for i in items if i not in present)
    if not dry_run:
        for space_id in added:
            hub.add_to_collection(slug, space_id)
    kept = tuple(i for i in items if i in present)
    return CollectionSync(
        title, slug, found is None, metadata, added, kept, tuple(skipped), planned=dry_run
    )
