"""Roll canonical Spaces back to the state promote recorded before this release wrote them.

The recorded state (:class:`~releaselib.publish.canonical_state.SpaceState`, the ledger's
``baseline``) names the canonical's head commit and its variables; :class:`Written` names what
the promotion wrote (its commit, the files it uploaded or deleted, the variables it set). A
rollback restores only that: one new commit puts the promotion's files back as they were at
the recorded commit (downloaded from the Space's own history; files the promotion added are
deleted), and each variable the promotion set is set back (or removed when it was new).
Files and variables the promotion never wrote are kept, and so is a variable whose value
changed since. A canonical whose head is no longer the promotion's commit is ``held`` unless
``force``; then too a file changed since the promotion is kept. Hardware and secrets are never
written by a release, so nothing restores them; a variable recorded by name only (its value
looked like a token) is kept. A canonical that already holds the recorded files and variables
is ``current``: a second rollback changes nothing. A canonical that did not exist before the
release is emptied, never deleted.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from releaselib.errors import AuthError, ReleaseError
from releaselib.hub.client import KEEP_REMOTE, Hub
from releaselib.publish.canonical_state import SpaceState
from releaselib.stage.staged_tree import build_manifest

RestoreStatus = Literal["restored", "current", "planned", "held", "failed"]


@dataclass(frozen=True)
class Written:
    """What this release's promotion wrote into one canonical: the commit it made (None: it
    made none), the paths it uploaded or deleted, the variables it set and their values."""

    head: str | None = None
    paths: frozenset[str] = field(default_factory=frozenset)
    variables: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Restore:
    """Restoring one canonical target of ``env`` to its recorded state ``previous``.

    ``restored``: a new commit (``commit``) and/or variables put it back; ``current``: it
    already was; ``planned``: a dry run (or no ``--yes``) would; ``held``: it changed since the
    promotion (``reason``; ``--force`` restores anyway); ``failed``: ``reason`` says why.
    ``head`` is the target's head before the rollback; ``kept`` what it leaves as it is."""

    env: str
    target: str
    status: RestoreStatus
    previous: str | None
    head: str | None = None
    commit: str | None = None
    upload: tuple[str, ...] = ()
    delete: tuple[str, ...] = ()
    variables: tuple[str, ...] = ()  # keys set back or removed
    kept: tuple[str, ...] = ()  # what the promotion wrote but the rollback keeps, and why
    reason: str = ""

    @property
    def changes(self) -> bool:
        return bool(self.upload or self.delete or self.variables)

    def as_json(self) -> dict[str, Any]:
        return {
            "env": self.env,
            "target": self.target,
            "status": self.status,
            "previous": self.previous,
            "head": self.head,
            "commit": self.commit,
            "upload": list(self.upload),
            "delete": list(self.delete),
            "variables": list(self.variables),
            "kept": list(self.kept),
            "reason": self.reason,
        }


def rollback(
    hub: Hub,
    recorded: Mapping[str, Mapping[str, SpaceState]],
    written: Mapping[str, Written],
    *,
    version: str,
    apply: bool,
    force: bool = False,
) -> list[Restore]:
    """Restore every target of ``recorded`` (env -> target -> state) as far as ``written``
    (target -> what the promotion wrote) allows, in env order; a plan unless ``apply``. A
    target that fails never stops the others."""
    return [
        restore(
            hub,
            env,
            state,
            written.get(state.space_id, Written(state.head)),
            version=version,
            apply=apply,
            force=force,
        )
        for env, targets in recorded.items()
        for state in targets.values()
    ]


def restore(
    hub: Hub,
    env: str,
    before: SpaceState,
    written: Written,
    *,
    version: str,
    apply: bool,
    force: bool = False,
) -> Restore:
    """Put back in ``before.space_id`` what ``written`` changed since ``before`` (a plan
    unless ``apply``); held when its head moved since the promotion, unless ``force``."""
    base = Restore(env, before.space_id, "failed", before.head)
    try:
        space = hub.space(before.space_id)
        if space is None:
            missing = f"{before.space_id} does not exist (or this token cannot see it)"
            return replace(base, reason=missing)
        base = replace(base, head=space.sha)
        promoted = written.head or before.head
        current = hub.remote_files(before.space_id) if space.sha else {}
        previous = hub.remote_files(before.space_id, before.head) if before.head else {}
        moved = space.sha != promoted and any(
            current.get(p) != previous.get(p) for p in written.paths
        )
        if moved and not force:
            reason = (
                f"changed since the promotion: head {(space.sha or 'none')[:12]}, promoted "
                f"{(promoted or 'none')[:12]}; pass --force to restore only what the "
                "promotion wrote"
            )
            return replace(base, status="held", reason=reason)
        ours = hub.remote_files(before.space_id, promoted) if moved and promoted else current
        changed = sorted(p for p in written.paths if current.get(p) != ours.get(p))
        scope = [p for p in sorted(written.paths) if p not in changed and p not in KEEP_REMOTE]
        upload = tuple(p for p in scope if p in previous and current.get(p) != previous[p])
        delete = tuple(p for p in scope if p in current and p not in previous)
        to_set, to_unset, kept = _variables(before, written, hub.variables(before.space_id))
        kept = [*(f"{p} (changed since the promotion)" for p in changed), *kept]
        plan = replace(
            base,
            upload=upload,
            delete=delete,
            variables=tuple(sorted([*to_set, *to_unset])),
            kept=tuple(kept),
            reason=f"kept {'; '.join(kept)}" if kept else "",
        )
        if not plan.changes:
            return replace(plan, status="current")
        if not apply:
            return replace(plan, status="planned")
        for key, value in to_set.items():
            hub.set_variable(before.space_id, key, value)
        for key in to_unset:
            hub.delete_variable(before.space_id, key)
        commit = _commit(hub, before, upload, delete, version) if upload or delete else None
    except AuthError:
        raise
    except ReleaseError as exc:
        return replace(base, reason=exc.one_line())
    return replace(plan, status="restored", commit=commit)


def _variables(
    before: SpaceState, written: Written, held: Mapping[str, str]
) -> tuple[dict[str, str], list[str], list[str]]:
    """The variables to set back and to remove (only those the promotion set, still holding
    its value), and what is kept, in words."""
    recorded, to_set, to_unset = dict(before.variables), {}, []
    kept = [
        f"variable {k} (recorded by name only: its value looks like a token)"
        for k in before.withheld
    ]
    for key, value in written.variables:
        if key in before.withheld or held.get(key) == recorded.get(key):
            continue  # withheld (kept, said above), or already as recorded
        if held.get(key) != value:
            kept.append(f"variable {key} (changed since the promotion)")
        elif key in recorded:
            to_set[key] = recorded[key]
        else:
            to_unset.append(key)
    return to_set, to_unset, kept


def _commit(
    hub: Hub, before: SpaceState, upload: Sequence[str], delete: Sequence[str], version: str
) -> str:
    """One commit: ``upload`` as they were at ``before.head``, ``delete`` gone."""
    with tempfile.TemporaryDirectory(prefix="openenv-release-rollback-") as scratch:
        tree = Path(scratch)
        if upload:
            assert before.head is not None  # files to upload come from the recorded commit
            hub.download(before.space_id, before.head, tree, only=upload)
        previous = (before.head or "nothing")[:12]
        return hub.commit(
            before.space_id,
            tree,
            upload=upload,
            delete=delete,
            message=f"Roll back release {version}: restore {previous} (openenv-release)",
            manifest=build_manifest(tree),
        )
