"""The ``promote``, ``rollback`` and ``collection`` tasks: verdicts from the release's ledger
in, the Hub's canonical Spaces and collection out (``releaselib.publish.steps`` records each
decision)."""

from __future__ import annotations

from invoke.context import Context
from invoke.exceptions import Exit

from openenv_release.common import (
    decision_setup,
    plugin_registry,
    print_json,
    release_config,
    reported,
    visibility,
)
from openenv_release.flags import DECIDE_HELP, helps, release_task


@release_task(
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
        "timeout",
        "wait",
        "allow_downgrade",
        table=DECIDE_HELP,
        create_missing="create a canonical Space that does not exist yet",
        yes="also delete the files of an earlier release that the tree no longer has (the plan "
        "names them; without --yes such a canonical is held)",
        verify="then wait for each promoted canonical to rebuild, probe it as verify probes a "
        "candidate, and roll back one that FAILs (--json: each canonical's verdict under "
        '"canonicals")',
    ),
)
def promote(
    c: Context,
    version: str | None = None,
    env: list[str] | None = None,
    dry_run: bool = False,
    create_missing: bool = False,
    yes: bool = False,
    verify: bool = False,
    allow_downgrade: bool = False,
    timeout: str | None = None,
    wait: str | None = None,
    repo: str | None = None,
    namespace: str | None = None,
    suffix: str | None = None,
    staging_dir: str | None = None,
    ledger: str | None = None,
    hub_endpoint: str | None = None,
    json: bool = False,
) -> None:
    """Publish each PASSed candidate's verified tree into its canonical Spaces.

    With --verify, then verify each promoted canonical and roll back one that FAILs. Exit 1 if
    any promotion failed or a canonical FAILed, 5 if a canonical stayed INCONCLUSIVE. When
    nothing was promoted (every canonical held): exit 1 if a held env FAILed, else 5.
    """
    from openenv_release.verify_tasks import number
    from releaselib import step_tables as tables
    from releaselib.hub.client import Hub
    from releaselib.publish.canonical_check import CheckOptions
    from releaselib.publish.steps import canonical_step, promote_step
    from releaselib.verify.candidates import DEFAULT_TIMEOUT
    from releaselib.verify.verdicts import INCONCLUSIVE_EXIT, exit_status, from_ledger

    with reported():
        configured = release_config(c)
        check = CheckOptions(
            timeout=number("timeout", timeout, configured, DEFAULT_TIMEOUT),
            wait=number("wait", wait, configured, 900.0),
        )
        config, console, release_ledger = decision_setup(
            c,
            json,
            ledger,
            repo=repo,
            version=version,
            namespace=namespace,
            suffix=suffix,
            staging_dir=staging_dir,
            hub_endpoint=hub_endpoint,
        )
        hub, registry = Hub.connect(config.hub_endpoint), plugin_registry()
        decisions = promote_step(
            hub,
            config,
            release_ledger,
            registry,
            envs=env or None,
            create_missing=create_missing,
            dry_run=dry_run,
            delete=yes,
            downgrade=allow_downgrade,
        )
        checks = []
        if verify and not dry_run:
            envs = list(dict.fromkeys(d.env for d in decisions))
            checks = canonical_step(hub, config, release_ledger, registry, check, envs=envs)
        if json:
            after = {"canonicals": checks} if verify and not dry_run else {}
            print_json(config, "promotions", decisions, **after)
        else:
            tables.print_promotions(console, decisions, dry_run=dry_run)
            if checks:
                tables.print_canonical_checks(console, checks)
        code, _ = exit_status(checked.outcome for checked in checks)
        if any(d.status == "failed" for d in decisions) or code:
            raise Exit(code=code or 1)
        if not any(d.status in ("promoted", "current", "planned") for d in decisions):
            verdicts = from_ledger(release_ledger)
            held = dict.fromkeys(d.env for d in decisions)
            code, _ = exit_status(verdicts[e].outcome if e in verdicts else "" for e in held)
            counted = f"{len(held)} env{'' if len(held) == 1 else 's'}"
            why = f"every canonical of {counted} was held (the reasons above say what each needs)"
            console.print(
                f"nothing promoted: {why if held else 'no env has a verdict to act on'}",
                markup=False,
                soft_wrap=True,
            )
            raise Exit(code=code or INCONCLUSIVE_EXIT)


@release_task(
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
        "force",
        table=DECIDE_HELP,
        env="env whose canonical Spaces to restore (repeatable; default: every env promote "
        "recorded)",
        yes="restore them; without --yes only the plan is printed",
    ),
)
def rollback(
    c: Context,
    version: str | None = None,
    env: list[str] | None = None,
    dry_run: bool = False,
    yes: bool = False,
    force: bool = False,
    repo: str | None = None,
    namespace: str | None = None,
    suffix: str | None = None,
    staging_dir: str | None = None,
    ledger: str | None = None,
    hub_endpoint: str | None = None,
    json: bool = False,
) -> None:
    """Restore what the release's promotion wrote into canonical Spaces to its state before.

    Each gets one new commit putting the promotion's files back as the recorded commit held
    them, and the variables it set back; what it did not write is kept. A canonical whose head
    moved since the promotion is held unless --force. Exit 1 if any restore failed or was held.
    """
    from releaselib import step_tables as tables
    from releaselib.hub.client import Hub
    from releaselib.publish.steps import rollback_step

    with reported():
        config, console, release_ledger = decision_setup(
            c,
            json,
            ledger,
            repo=repo,
            version=version,
            namespace=namespace,
            suffix=suffix,
            staging_dir=staging_dir,
            hub_endpoint=hub_endpoint,
        )
        applied = yes and not dry_run
        restores = rollback_step(
            Hub.connect(config.hub_endpoint),
            config,
            release_ledger,
            envs=env,
            apply=applied,
            force=force,
        )
        if json:
            print_json(config, "restores", restores)
        else:
            tables.print_restores(console, restores, applied=applied)
        if any(r.status in ("failed", "held") for r in restores):
            raise Exit(code=1)


@release_task(
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
        table=DECIDE_HELP,
        space_id="add this PASSed candidate (repeatable; default: every PASSed candidate)",
        collection_slug="sync the collection with this slug (an alias resolves) instead",
        collection_namespace="namespace of the collection (default: the Spaces' namespace)",
        **{
            "global": "also plan adding the passing envs' canonical Spaces to the global "
            "collection (added with --yes)"
        },
        foreign_collection="allow --collection-slug to name a collection that is not this "
        "release's own: its items are planned (added with --yes), its settings kept",
        yes="do the planned writes to the global or a foreign collection",
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
    foreign_collection: bool = False,
    yes: bool = False,
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
    from releaselib import step_tables as tables
    from releaselib.hub.client import Hub
    from releaselib.publish.steps import collection_step

    with reported():
        config, console, release_ledger = decision_setup(
            c,
            json,
            ledger,
            repo=repo,
            version=version,
            namespace=namespace,
            suffix=suffix,
            staging_dir=staging_dir,
            hub_endpoint=hub_endpoint,
            collection_namespace=collection_namespace,
            private=visibility(private, public),
        )
        synced = collection_step(
            Hub.connect(config.hub_endpoint),
            config,
            release_ledger,
            plugin_registry(),
            space_ids=space_id or [],
            slug=collection_slug,
            include_global=global_,
            foreign=foreign_collection,
            confirm=yes,
            dry_run=dry_run,
        )
        if json:
            print_json(config, "collections", synced)
        else:
            for sync in synced:
                tables.print_collection(console, sync, dry_run=dry_run)
