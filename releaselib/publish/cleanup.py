"""Archive or delete the candidates whose promotion is complete.

A candidate qualifies when every canonical target already holds its verified tree and
variables (promote, planned read-only, has nothing left to do). Archiving makes it private
and pauses it; deleting removes it. Only version-suffixed candidates are touched, never an
unsuffixed Space. Without ``apply`` nothing changes: the records are the plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from itertools import groupby
from typing import Any, Literal

from releaselib.config import ReleaseConfig
from releaselib.errors import AuthError, ReleaseError
from releaselib.hub.client import Hub, RemoteSpace
from releaselib.plugins import PluginRegistry
from releaselib.publish.promote import Promotion, promote
from releaselib.records import Verdict
from releaselib.space_ids import CandidateId

Action = Literal["archive", "delete"]
Status = Literal["done", "planned", "clean", "kept", "failed"]


@dataclass(frozen=True)
class Cleanup:
    """What cleanup did (``done``), would do (``planned``), found already done (``clean``),
    refused (``kept``, with the reason) or failed at, for one candidate."""

    env: str
    space_id: str
    action: Action
    status: Status
    steps: tuple[str, ...] = ()
    reason: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "env": self.env,
            "space_id": self.space_id,
            "action": self.action,
            "status": self.status,
            "steps": list(self.steps),
            "reason": self.reason,
        }


def cleanup(
    hub: Hub,
    config: ReleaseConfig,
    verdicts: Mapping[str, Verdict],
    registry: PluginRegistry,
    *,
    action: Action,
    apply: bool = False,
    envs: list[str] | None = None,
) -> list[Cleanup]:
    """Archive or delete each selected env's candidate once its promotion is complete."""
    plan = promote(hub, config, verdicts, registry, envs=envs, dry_run=True)
    results = []
    for env, group in groupby(plan, key=lambda p: p.env):
        decisions = list(group)
        passed = env in verdicts and verdicts[env].outcome == "PASS"
        results.append(_clean_one(hub, config, env, decisions, action, apply, passed=passed))
    return results


def steps_for(space: RemoteSpace, action: Action) -> tuple[str, ...]:
    """What is left to do to ``space`` for ``action``."""
    if action == "delete":
        return ("delete",)
    todo = {"make private": space.private is not True, "pause": space.stage != "PAUSED"}
    return tuple(step for step, needed in todo.items() if needed)


def _clean_one(
    hub: Hub, config: ReleaseConfig, env: str, decisions: list[Promotion], action: Action,
    apply: bool, *, passed: bool,
) -> Cleanup:
    candidate = decisions[0].candidate
    base = Cleanup(env, candidate, action, "kept")
    if CandidateId.parse(candidate, config.suffix) is None or candidate in {
        d.target for d in decisions
    }:
        return replace(base, reason=f"{candidate} is not a version-suffixed candidate")
    space = hub.space(candidate)
    if space is None and passed:
        return replace(base, status="clean", reason="the candidate no longer exists")
    pending = next((d for d in decisions if not d.done), None)
    if pending is not None:
        why = pending.reason or f"{pending.target} does not hold the candidate yet; run promote"
        return replace(base, reason=f"promotion into {pending.target} is not complete: {why}")
    assert space is not None  # a complete promotion read the candidate's files
    steps = steps_for(space, action)
    if not steps:
        return replace(base, status="clean")
    if not apply:
        return replace(base, status="planned", steps=steps)
    try:
        if "delete" in steps:
            hub.delete_space(candidate)
        if "make private" in steps:
            hub.set_private(candidate, True)
        if "pause" in steps:
            hub.pause(candidate)
    except AuthError:
        raise
    except ReleaseError as exc:
        return replace(base, status="failed", steps=steps, reason=exc.one_line())
    return replace(base, status="done", steps=steps)
