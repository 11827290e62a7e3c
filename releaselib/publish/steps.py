"""promote, collection, pin and cleanup as steps: verdicts from the release's ledger in, the
step's decisions out, each recorded back into the ledger (except in a dry run). ``release``
and the tasks of the same names call these."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from releaselib.config import ReleaseConfig
from releaselib.errors import UsageError
from releaselib.hub.client import Hub
from releaselib.ledger import step_records
from releaselib.ledger.ledger import Ledger
from releaselib.plugins import PluginRegistry
from releaselib.publish.canonical_check import (
    CanonicalCheck,
    CheckOptions,
    Promoted,
    check_canonicals,
)
from releaselib.publish.canonical_state import SpaceState
from releaselib.publish.cleanup import Cleanup, cleanup
from releaselib.publish.collection import CollectionSync, sync_collection
from releaselib.publish.pin import commit_pins
from releaselib.publish.pin_step import PinDecision, pin_envs
from releaselib.publish.promote import Promotion, promote
from releaselib.publish.rollback import Restore, Written, rollback
from releaselib.verify.candidates import Update
from releaselib.verify.verdicts import from_ledger


def promote_step(
    hub: Hub,
    config: ReleaseConfig,
    ledger: Ledger,
    registry: PluginRegistry,
    *,
    envs: list[str] | None = None,
    create_missing: bool = False,
    dry_run: bool = False,
    delete: bool = False,
    downgrade: bool = False,
) -> list[Promotion]:
    """Promote the PASSed candidates of ``envs`` (default: every env with a verdict); each
    canonical's state is recorded (``baseline``) before it is written. ``delete`` and
    ``downgrade``: see :func:`~releaselib.publish.promote.promote`."""
    verdicts = from_ledger(ledger)
    decisions = promote(
        hub,
        config,
        verdicts,
        registry,
        envs=envs,
        create_missing=create_missing,
        dry_run=dry_run,
        delete=delete,
        downgrade=downgrade,
        before_write=lambda planned: step_records.record_baselines(ledger, planned),
    )
    if not dry_run:
        chosen = envs or list(verdicts)
        step_records.record_promotions(ledger, chosen, decisions, verdicts)
    return decisions


def canonical_step(
    hub: Hub,
    config: ReleaseConfig,
    ledger: Ledger,
    registry: PluginRegistry,
    options: CheckOptions,
    *,
    envs: Sequence[str] | None = None,
    on_update: Update | None = None,
) -> list[CanonicalCheck]:
    """Verify the canonicals that the standing promote records of ``envs`` (default: all)
    promoted and that no check has judged since (an INCONCLUSIVE one is checked again); roll
    back each that FAILs (:mod:`~releaselib.publish.canonical_check`); record each env."""
    todo = [p for env in envs or ledger.envs() for p in _unchecked(ledger, env)]
    recorded = {
        target: SpaceState.from_json(state)
        for env in dict.fromkeys(p.env for p in todo)
        for target, state in step_records.baselines(ledger, env).items()
    }
    envs_done = dict.fromkeys(p.env for p in todo)
    written = {t: w for env in envs_done for t, w in written_by_promotion(ledger, env).items()}
    checks = check_canonicals(
        hub, config, registry, todo, recorded, options, on_update, written=written
    )
    step_records.record_canonical_checks(ledger, checks)
    return checks


def _unchecked(ledger: Ledger, env: str) -> list[Promoted]:
    """``env``'s promoted canonicals that want a check after promotion."""
    entry = ledger.env(env)
    promote, checked = entry.get("promote"), entry.get("canonical")
    if promote is None or promote.data.get("decision") != "promoted":
        return []
    judged = checked.data if checked is not None else {}
    if judged.get("promoted_at") == promote.at and all(
        c.get("outcome") != "INCONCLUSIVE" for c in judged.get("checks", [])
    ):
        return []
    return [
        Promoted(env, str(p["target"]), str(p["candidate"]))
        for p in promote.data.get("promotions", [])
        if p.get("status") in ("promoted", "current")
    ]


def rollback_step(
    hub: Hub,
    config: ReleaseConfig,
    ledger: Ledger,
    *,
    envs: Sequence[str] | None = None,
    apply: bool = False,
    force: bool = False,
) -> list[Restore]:
    """Restore what this release's promotion wrote into the canonicals of ``envs`` (default:
    every env with one recorded) to the state promote recorded before; a plan unless ``apply``.
    ``force``: also a canonical changed since the promotion (see
    :func:`~releaselib.publish.rollback.restore`). What it restored is recorded."""
    recorded = {
        env: {t: SpaceState.from_json(s) for t, s in step_records.baselines(ledger, env).items()}
        for env in envs or ledger.envs()
    }
    missing = [env for env in envs or () if not recorded[env]]
    if missing:
        raise UsageError(
            f"--env {', '.join(missing)}: this release's ledger records no canonical state "
            "from promote for it, so there is nothing to restore",
            remedy="name an env this release promoted (see `status`)",
        )
    written = {t: w for env in recorded for t, w in written_by_promotion(ledger, env).items()}
    restores = rollback(
        hub,
        {e: t for e, t in recorded.items() if t},
        written,
        version=config.version,
        apply=apply,
        force=force,
    )
    if apply:
        step_records.record_rollback(ledger, [r for r in restores if r.status != "current"])
    return restores


def written_by_promotion(ledger: Ledger, env: str) -> dict[str, Written]:
    """What this release's promote records say it wrote into each of ``env``'s canonicals
    (target -> :class:`~releaselib.publish.rollback.Written`): the last commit it made, every
    file it uploaded or deleted, the last value of each variable it set."""
    made: dict[str, tuple[str | None, set[str], dict[str, str]]] = {}
    for record in ledger.history(env, "promote"):
        for p in record.data.get("promotions") or ():
            if p.get("status") not in ("promoted", "failed"):
                continue
            head, paths, values = made.setdefault(str(p["target"]), (None, set(), {}))
            paths.update(map(str, [*p.get("upload", ()), *p.get("delete", ())]))
            values.update({str(k): str(v) for k, v in (p.get("variable_values") or {}).items()})
            made[str(p["target"])] = (p.get("pushed") or head, paths, values)
    return {
        target: Written(head, frozenset(paths), tuple(sorted(values.items())))
        for target, (head, paths, values) in made.items()
    }


def collection_step(
    hub: Hub,
    config: ReleaseConfig,
    ledger: Ledger,
    registry: PluginRegistry,
    *,
    envs: Sequence[str] | None = None,
    space_ids: Sequence[str] = (),
    slug: str | None = None,
    include_global: bool = False,
    foreign: bool = False,
    confirm: bool = False,
    dry_run: bool = False,
) -> list[CollectionSync]:
    """Sync the versioned collection with the PASSed candidates of ``envs`` (default: all, or
    those of ``space_ids``); the first result is the versioned collection. ``foreign`` and
    ``confirm``: see :func:`~releaselib.publish.collection.sync_collection`; a collection only
    planned (a dry run, an unconfirmed foreign write) is not recorded."""
    verdicts = {
        env: v
        for env, v in from_ledger(ledger).items()
        if (envs is None or env in envs) and (not space_ids or v.space_id in space_ids)
    }
    synced = sync_collection(
        hub,
        config,
        verdicts,
        registry,
        space_ids=space_ids,
        slug=slug,
        include_global=include_global,
        foreign=foreign,
        confirm=confirm,
        dry_run=dry_run,
    )
    if not synced[0].planned:
        step_records.record_collection(ledger, synced[0], verdicts)
    return synced


def pin_step(
    hub: Hub,
    config: ReleaseConfig,
    ledger: Ledger,
    *,
    envs: list[str] | None = None,
    commit: bool = False,
    embedded_ok: bool = False,
) -> tuple[list[PinDecision], str | None]:
    """Pin the FAILed envs and lift the pins of passing ones; with ``commit``, commit what
    changed. Returns the decisions and the commit's sha (None: nothing committed).
    ``embedded_ok``: see :func:`~releaselib.publish.pin_step.pin_envs`."""
    decisions = pin_envs(
        hub, config, from_ledger(ledger), envs=envs, embedded_ok=embedded_ok, commit=commit
    )
    step_records.record_pins(ledger, decisions)
    results = [d.result for d in decisions if d.result is not None]
    sha = None
    if commit and any(r.changed for r in results):
        sha = commit_pins(config.repo, results, version=config.version)
    return decisions, sha


def cleanup_step(
    hub: Hub,
    config: ReleaseConfig,
    ledger: Ledger,
    registry: PluginRegistry,
    *,
    action: Literal["archive", "delete"],
    apply: bool = False,
) -> list[Cleanup]:
    """Archive or delete the candidates whose canonical promotion is complete (a plan unless
    ``apply``)."""
    results = cleanup(hub, config, from_ledger(ledger), registry, action=action, apply=apply)
    step_records.record_cleanup(ledger, results)
    return results
