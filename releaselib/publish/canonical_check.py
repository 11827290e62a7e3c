"""Canonical Spaces verified after promotion, and rolled back when they fail on their own.

After promote writes, each promoted canonical rebuilds. It is waited for and probed with the
gate every candidate passes (:func:`~releaselib.verify.candidates.verify_spaces`: the Hub's
BUILD_ERROR/RUNTIME_ERROR for the commit it holds, else a real reset and a schema-correct step
on every READY domain). A canonical that FAILs on that evidence, where its candidate PASSed,
is rolled back at once to the state promote recorded before writing it
(:func:`~releaselib.publish.rollback.restore`). Its env is not pinned: its code passed as a
candidate, so what differs between the two Spaces (variables, hardware, secret names) is named
instead. An INCONCLUSIVE canonical is no evidence: it is left as promoted, and named.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from releaselib.config import ReleaseConfig
from releaselib.hub.client import Hub
from releaselib.plugins import PluginRegistry
from releaselib.publish.canonical_state import SpaceState, differences, read_state
from releaselib.publish.rollback import Restore, Written, restore
from releaselib.verify.candidates import Update, verify_spaces
from releaselib.verify.probe import Outcome
from releaselib.verify.results import evidence


@dataclass(frozen=True)
class Promoted:
    """One canonical target that promote made hold ``env``'s candidate."""

    env: str
    target: str
    candidate: str


@dataclass(frozen=True)
class CheckOptions:
    """How canonicals are waited for and probed (as ``verify`` does candidates)."""

    timeout: float = 20.0
    wait: float = 900.0
    interval: float = 2.0
    tls: ssl.SSLContext | None = None
    rehearsal: str | None = None
    stop_judged: bool = False  # a rehearsal: pause each canonical once its verdict is in


@dataclass(frozen=True)
class CanonicalCheck:
    """The verdict on one canonical after promotion, and the rollback it led to (if any).

    ``previous``: its head before the promotion (as recorded); ``promoted``: the head the
    verdict is about; ``differences``: what differs from the candidate, for a canonical that
    did not PASS."""

    env: str
    target: str
    candidate: str
    outcome: str
    reason: str
    previous: str | None
    promoted: str | None
    our_error: bool = False
    evidence: Mapping[str, Any] | None = None
    differences: tuple[str, ...] = ()
    rollback: Restore | None = None

    @property
    def rolled_back(self) -> bool:
        return self.rollback is not None and self.rollback.status in ("restored", "current")

    def line(self) -> str:
        """One line for the run's events: the verdict, and what was done about it."""
        said = f"{self.target}: {self.outcome} ({self.reason})"
        if self.rollback is not None:
            r = self.rollback
            if r.status == "failed":
                return f"{said}; rollback failed: {r.reason}"
            made = f" with commit {r.commit}" if r.commit else ""
            to = r.previous[:12] if r.previous else "an empty Space (it held no commit)"
            return f"{said}; rolled back to {to}{made}"
        if self.outcome == "INCONCLUSIVE":
            return f"{said}; left as promoted"
        return said

    def as_json(self) -> dict[str, Any]:
        return {
            "env": self.env,
            "target": self.target,
            "candidate": self.candidate,
            "outcome": self.outcome,
            "reason": self.reason,
            "our_error": self.our_error,
            "evidence": dict(self.evidence or {}),
            "previous": self.previous,
            "promoted": self.promoted,
            "differences": list(self.differences),
            "rolled_back": self.rolled_back,
            "rollback": self.rollback.as_json() if self.rollback is not None else None,
        }


def check_canonicals(
    hub: Hub,
    config: ReleaseConfig,
    registry: PluginRegistry,
    promoted: Sequence[Promoted],
    recorded: Mapping[str, SpaceState],
    options: CheckOptions,
    on_update: Update | None = None,
    written: Mapping[str, Written] | None = None,
) -> list[CanonicalCheck]:
    """Verify each ``promoted`` canonical; roll back each that FAILs to its ``recorded`` state
    (target -> the state promote recorded before writing it), as far as ``written`` (target ->
    what the promotion wrote) goes. One check per target, in order."""
    if not promoted:
        return []
    results = verify_spaces(
        hub,
        [p.target for p in promoted],
        suffix=config.suffix,
        registry=registry,
        timeout=options.timeout,
        wait=options.wait,
        interval=options.interval,
        tls=options.tls,
        on_update=on_update,
        rehearsal=options.rehearsal,
        stop_judged=options.stop_judged,
        envs={p.target: p.env for p in promoted},
    )
    checks = []
    for p, result in zip(promoted, results, strict=True):
        before = recorded.get(p.target)
        check = CanonicalCheck(
            p.env,
            p.target,
            p.candidate,
            result.outcome.value,
            result.reason,
            before.head if before is not None else None,
            result.state.sha,
            result.our_error,
            evidence(result.decisive),
        )
        if result.outcome is not Outcome.PASS:
            unlike = differences(read_state(hub, p.candidate), read_state(hub, p.target))
            check = replace(check, differences=tuple(unlike))
        if result.outcome is Outcome.FAIL:
            wrote = (written or {}).get(p.target, Written(before.head if before else None))
            check = _rolled_back(hub, config, check, before, wrote)
        checks.append(check)
    return checks


def _rolled_back(
    hub: Hub,
    config: ReleaseConfig,
    check: CanonicalCheck,
    before: SpaceState | None,
    written: Written,
) -> CanonicalCheck:
    if before is None:
        reason = (
            f"{check.reason}; promote recorded no earlier state of {check.target}, so it was "
            "not rolled back: restore it by hand"
        )
        return replace(check, reason=reason)
    done = restore(hub, check.env, before, written, version=config.version, apply=True)
    return replace(check, rollback=done)
