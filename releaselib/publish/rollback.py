"""Roll canonical Spaces back to the state promote recorded before this release wrote them.

The recorded state (:class:`~releaselib.publish.canonical_state.SpaceState`, the ledger's
``baseline``) names the canonical's head commit and its variables. A rollback makes one new
commit whose tree is that commit's tree again: the files that differ are uploaded from the
Space's own history (downloaded at the recorded commit), the files the release added are
deleted (``.gitattributes`` stays). Variables are set back and those the release added are
removed; hardware and secrets are never written by a release, so nothing restores them. A
canonical that already holds the recorded tree and variables is ``current``: a second rollback
changes nothing. A canonical that did not exist before the release is emptied, never deleted.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from releaselib.errors import AuthError, ReleaseError
from releaselib.hub.client import KEEP_REMOTE, Hub
from releaselib.publish.canonical_state import SpaceState
from releaselib.stage.staged_tree import build_manifest

RestoreStatus = Literal["restored", "current", "planned", "failed"]


@dataclass(frozen=True)
class Restore:
    """Restoring one canonical target of ``env`` to its recorded state ``previous``.

    ``restored``: a new commit (``commit``) and/or variables put it back; ``current``: it
    already was; ``planned``: a dry run (or no ``--yes``) would; ``failed``: ``reason`` says
    why. ``head`` is the target's head before the rollback (the release's commit)."""

    env: str
    target: str
    status: RestoreStatus
    previous: str | None
    head: str | None = None
    commit: str | None = None
    upload: tuple[str, ...] = ()
    delete: tuple[str, ...] = ()
    variables: tuple[str, ...] = ()  # keys set back or removed
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
            "reason": self.reason,
        }


def rollback(
    hub: Hub,
    recorded: Mapping[str, Mapping[str, SpaceState]],
    *,
    version: str,
    apply: bool,
) -> list[Restore]:
    """Restore every target of ``recorded`` (env -> target -> state), in env order; a plan
    unless ``apply``. A target that fails never stops the others."""
    return [
        restore(hub, env, state, version=version, apply=apply)
        for env, targets in recorded.items()
        for state in targets.values()
    ]


def restore(hub: Hub, env: str, before: SpaceState, *, version: str, apply: bool) -> Restore:
    """Make ``before.space_id`` hold ``before``'s tree and variables again (a plan unless
    ``apply``)."""
    base = Restore(env, before.space_id, "failed", before.head)
    try:
        space = hub.space(before.space_id)
        if space is None:
            missing = f"{before.space_id} does not exist (or this token cannot see it)"
            return replace(base, reason=missing)
        base = replace(base, head=space.sha)
        current = hub.remote_files(before.space_id) if space.sha else {}
        previous = hub.remote_files(before.space_id, before.head) if before.head else {}
        upload = tuple(sorted(p for p, f in previous.items() if current.get(p) != f))
        delete = tuple(sorted(p for p in current if p not in previous and p not in KEEP_REMOTE))
        held, wanted = hub.variables(before.space_id), dict(before.variables)
        to_set = {k: v for k, v in wanted.items() if held.get(k) != v}
        to_unset = sorted(k for k in held if k not in wanted)
        plan = replace(
            base, upload=upload, delete=delete, variables=tuple(sorted([*to_set, *to_unset]))
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
