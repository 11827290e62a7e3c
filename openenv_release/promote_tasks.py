"""The ``promote``, ``collection``, ``pin`` and ``cleanup`` tasks: verdicts from the ledger in,
releaselib's decisions out, each recorded back into the ledger (except in a dry run)."""

from __future__ import annotations

import json as jsonlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from invoke.context import Context
from invoke.exceptions import Exit
from invoke.tasks import task
from rich.console import Console
from rich.table import Table

from openenv_release.common import (
    FLAG_HELP,
    consoles,
    helps,
    release_config,
    reported,
    require_ledger,
    visibility,
)
from releaselib import console as out
from releaselib.config import ReleaseConfig
from releaselib.errors import UsageError
from releaselib.options import Options, build_config
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.records import Verdict

if TYPE_CHECKING:
    from releaselib.ledger.ledger import Ledger
    from releaselib.publish.cleanup import Cleanup
    from releaselib.publish.collection import CollectionSync
    from releaselib.publish.pin_step import PinDecision
    from releaselib.publish.promote import Promotion

HELP = {
    **FLAG_HELP,
    "env": "env to decide for (repeatable; default: every env with a verdict)",
    "staging_dir": "where the release's ledger lives unless --ledger (default: ./hf-staging)",
    "ledger": "the release ledger holding the verdicts (default: the release's ledger)",
}


def setup(
    c: Context, options: Options, ledger: str | None, as_json: bool
) -> tuple[ReleaseConfig, Console, Ledger, dict[str, Verdict]]:
    """The release tuple (printed), the console, the release's ledger and its verdicts."""
    from releaselib.verify.verdicts import from_ledger

    config, resolution = build_config(options, release_config(c))
    console = consoles(as_json)
    out.print_tuple(console, config, resolution)
    book = require_ledger(config, ledger, remedy="run `verify` first, or pass --ledger PATH")
    return config, console, book, from_ledger(book)


def show(
    console: Console, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]
) -> None:
    table = Table(title=title)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row)
    console.print(table)


def emit(as_json: bool, config: ReleaseConfig, key: str, items: Sequence[Any]) -> None:
    if as_json:
        doc = {"config": config.as_json(), key: [i.as_json() for i in items]}
        print(jsonlib.dumps(doc, indent=2))


@task(
    iterable=["env"],
    help=helps(
        "repo",
        "version",
        "namespace",
        "suffix",
        "env",
        "staging_dir",
        "ledger",
        "hub_endpoint",
        "dry_run",
        "json",
        table=HELP,
        create_missing="create a canonical Space that does not exist yet",
    ),
)
def promote(
    c: Context,
    version: str | None = None,
    env: list[str] | None = None,
    dry_run: bool = False,
    create_missing: bool = False,
    repo: str | None = None,
    namespace: str | None = None,
    suffix: str | None = None,
    staging_dir: str | None = None,
    ledger: str | None = None,
    hub_endpoint: str | None = None,
    json: bool = False,
) -> None:
    """Publish each PASSed candidate's verified tree into its canonical Spaces.

    Exit 1 if any promotion failed.
    """
    from releaselib.hub.client import Hub
    from releaselib.publish.promote import promote as promote_step

    with reported():
        options = Options(
            repo=repo,
            version=version,
            namespace=namespace,
            suffix=suffix,
            staging_dir=staging_dir,
            hub_endpoint=hub_endpoint,
        )
        config, console, book, verdicts = setup(c, options, ledger, json)
        registry = PluginRegistry(get_plugin_manager())
        decisions = promote_step(
            Hub.connect(config.hub_endpoint),
            config,
            verdicts,
            registry,
            envs=env or None,
            create_missing=create_missing,
            dry_run=dry_run,
        )
        if not dry_run:
            record_promotions(book, decisions, verdicts)
        emit(json, config, "promotions", decisions)
        if not json:
            show(
                console,
                "promote plan" if dry_run else "promoted",
                ("env", "candidate", "target", "status", "files", "variables", "reason"),
                [
                    (
                        d.env,
                        d.candidate,
                        d.target,
                        d.status,
                        f"+{len(d.upload)} -{len(d.delete)}",
                        ", ".join(d.variables) or "-",
                        d.reason or "-",
                    )
                    for d in decisions
                ],
            )
        if any(d.status == "failed" for d in decisions):
            raise Exit(code=1)


def record_promotions(
    book: Ledger, decisions: Sequence[Promotion], verdicts: Mapping[str, Verdict]
) -> None:
    """One promote record per env, as ``release`` records it."""
    from releaselib.release import record_promotion

    for env in dict.fromkeys(d.env for d in decisions):
        passed = env in verdicts and verdicts[env].outcome == "PASS"
        record_promotion(book, env, [d for d in decisions if d.env == env], passed=passed)


@task(
    iterable=["space_id"],
    help=helps(
        "repo",
        "version",
        "namespace",
        "suffix",
        "staging_dir",
        "ledger",
        "hub_endpoint",
        "json",
        table=HELP,
        space_id="add this PASSed candidate (repeatable; default: every PASSed candidate)",
        collection_slug="sync the collection with this slug (an alias resolves) instead",
        collection_namespace="namespace of the collection (default: the Spaces' namespace)",
        **{"global": "also add the passing envs' canonical Spaces to the global collection"},
        private="make the collection private (the default)",
        public="make the collection public",
        dry_run="print a synthetic slug and the items it would add; change nothing",
    ),
)
def collection(
    c: Context,
    version: str | None = None,
    space_id: list[str] | None = None,
    dry_run: bool = False,
    collection_slug: str | None = None,
    collection_namespace: str | None = None,
    global_: bool = False,
    private: bool = False,
    public: bool = False,
    repo: str | None = None,
    namespace: str | None = None,
    suffix: str | None = None,
    staging_dir: str | None = None,
    ledger: str | None = None,
    hub_endpoint: str | None = None,
    json: bool = False,
) -> None:
    """Sync the versioned collection with the PASSed candidates."""
    from releaselib.hub.client import Hub
    from releaselib.publish.collection import sync_collection

    with reported():
        options = Options(
            repo=repo,
            version=version,
            namespace=namespace,
            suffix=suffix,
            staging_dir=staging_dir,
            hub_endpoint=hub_endpoint,
            collection_namespace=collection_namespace,
            private=visibility(private, public),
        )
        config, console, book, verdicts = setup(c, options, ledger, json)
        synced = sync_collection(
            Hub.connect(config.hub_endpoint),
            config,
            verdicts,
            PluginRegistry(get_plugin_manager()),
            space_ids=space_id or [],
            slug=collection_slug,
            include_global=global_,
            dry_run=dry_run,
        )
        if not dry_run:
            record_collection(book, synced[0], verdicts)
        emit(json, config, "collections", synced)
        if not json:
            for sync in synced:
                print_collection(console, sync, dry_run=dry_run)


def record_collection(book: Ledger, sync: CollectionSync, verdicts: dict[str, Verdict]) -> None:
    """A collection record for each env whose candidate the versioned collection holds."""
    from releaselib.release import verified_at

    for env, verdict in verdicts.items():
        added, present = verdict.space_id in sync.added, verdict.space_id in sync.present
        if added or present:
            book.record(
                env,
                "collection",
                slug=sync.slug,
                added=added,
                present=present,
                verified_at=verified_at(book, env),
            )


def print_collection(console: Console, sync: CollectionSync, *, dry_run: bool) -> None:
    state = "would create" if dry_run and sync.created else "created" if sync.created else "exists"
    console.print(f"[bold]{sync.title}[/] {sync.slug} ({state})")
    if sync.metadata:
        console.print(f"  re-synced: {', '.join(sync.metadata)}")
    rows = [(i, "would add" if dry_run else "added") for i in sync.added]
    rows += [(i, "present") for i in sync.present]
    rows += [(i, f"skipped: {why}") for i, why in sync.skipped]
    show(console, "items", ("space", "state"), rows)


@task(
    iterable=["env"],
    help=helps(
        "repo",
        "version",
        "namespace",
        "suffix",
        "env",
        "staging_dir",
        "ledger",
        "hub_endpoint",
        "json",
        "allow_embedded_hub",
        table=HELP,
        commit="commit the changed pyprojects in one git commit on the current branch",
    ),
)
def pin(
    c: Context,
    version: str | None = None,
    env: list[str] | None = None,
    commit: bool = False,
    repo: str | None = None,
    namespace: str | None = None,
    suffix: str | None = None,
    staging_dir: str | None = None,
    ledger: str | None = None,
    hub_endpoint: str | None = None,
    json: bool = False,
    allow_embedded_hub: bool = False,
) -> None:
    """Pin FAILed envs below the release in the checkout; lift old pins of passing ones.

    Prints the diff. The only task that writes to the checkout.
    """
    from releaselib.hub.client import Hub
    from releaselib.publish.pin import commit_pins
    from releaselib.publish.pin_step import pin_envs
    from releaselib.release import verified_at

    with reported():
        options = Options(
            repo=repo,
            version=version,
            namespace=namespace,
            suffix=suffix,
            staging_dir=staging_dir,
            hub_endpoint=hub_endpoint,
        )
        config, console, book, verdicts = setup(c, options, ledger, json)
        decisions = pin_envs(
            Hub.connect(config.hub_endpoint),
            config,
            verdicts,
            envs=env or None,
            embedded_ok=allow_embedded_hub,
        )
        for d in decisions:
            data = {k: v for k, v in d.as_json().items() if k != "env"}
            book.record(
                d.env,
                "pin",
                status="failed" if d.error else "done",
                verified_at=verified_at(book, d.env),
                **data,
            )
        sha = None
        if commit:
            sha = commit_pins(
                config.repo, [d.result for d in decisions if d.result], version=config.version
            )
        if json:
            doc = {
                "config": config.as_json(),
                "pins": [d.as_json() for d in decisions],
                "commit": sha,
            }
            print(jsonlib.dumps(doc, indent=2))
        else:
            print_pins(console, decisions, sha, commit=commit)
        if any(d.error for d in decisions):
            raise Exit(code=1)


def print_pins(
    console: Console, decisions: Sequence[PinDecision], sha: str | None, *, commit: bool
) -> None:
    show(
        console,
        "pins",
        ("env", "decision", "changed", "reason"),
        [(d.env, d.decision, "yes" if d.changed else "no", d.error or d.reason) for d in decisions],
    )
    for d in decisions:
        if d.changed and d.result is not None:
            console.print(d.result.diff, markup=False, highlight=False, end="")
    if commit:
        console.print(f"committed {sha}" if sha else "nothing to commit")


@task(
    help=helps(
        "repo",
        "version",
        "namespace",
        "suffix",
        "staging_dir",
        "ledger",
        "hub_endpoint",
        "json",
        table=HELP,
        archive="make promoted candidates private and pause them",
        delete="delete promoted candidates",
        yes="do it; without --yes only the plan is printed",
    ),
)
def cleanup(
    c: Context,
    version: str | None = None,
    archive: bool = False,
    delete: bool = False,
    yes: bool = False,
    repo: str | None = None,
    namespace: str | None = None,
    suffix: str | None = None,
    staging_dir: str | None = None,
    ledger: str | None = None,
    hub_endpoint: str | None = None,
    json: bool = False,
) -> None:
    """Archive or delete the candidates whose canonical promotion is complete."""
    from releaselib.hub.client import Hub
    from releaselib.publish.cleanup import cleanup as cleanup_step

    with reported():
        if archive == delete:
            raise UsageError(
                "pass exactly one of --archive and --delete", remedy="e.g. cleanup --archive --yes"
            )
        options = Options(
            repo=repo,
            version=version,
            namespace=namespace,
            suffix=suffix,
            staging_dir=staging_dir,
            hub_endpoint=hub_endpoint,
        )
        config, console, book, verdicts = setup(c, options, ledger, json)
        results = cleanup_step(
            Hub.connect(config.hub_endpoint),
            config,
            verdicts,
            PluginRegistry(get_plugin_manager()),
            action="delete" if delete else "archive",
            apply=yes,
        )
        record_cleanup(book, results)
        emit(json, config, "cleanup", results)
        if not json:
            show(
                console,
                "cleanup" if yes else "cleanup plan (pass --yes to do it)",
                ("env", "candidate", "status", "steps", "reason"),
                [
                    (r.env, r.space_id, r.status, ", ".join(r.steps) or "-", r.reason or "-")
                    for r in results
                ],
            )
        if any(r.status == "failed" for r in results):
            raise Exit(code=1)


def record_cleanup(book: Ledger, results: Sequence[Cleanup]) -> None:
    """A cleanup record for each candidate that is archived or deleted now."""
    for r in results:
        if r.status in ("done", "clean"):
            book.record(r.env, "cleanup", action=r.action, result=r.status, steps=list(r.steps))
