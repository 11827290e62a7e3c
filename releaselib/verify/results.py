"""What verifying a candidate found: each domain's probe, and the verdict on the Space with the
evidence it rests on, as the ledger records them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from releaselib.hub.runtime import SpaceState
from releaselib.records import Verdict
from releaselib.verify.probe import Outcome, ProbeResult


@dataclass(frozen=True)
class DomainAttempt:
    """One domain's probe."""

    domain: str
    stage: str
    result: ProbeResult
    seconds: float

    def as_json(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "stage": self.stage,
            "outcome": self.result.outcome.value,
            "reason": self.result.reason,
            "our_error": self.result.our_error,
            "seconds": round(self.seconds, 3),
            "transcript": [e.as_json() for e in self.result.transcript],
        }


def evidence(attempt: DomainAttempt | None) -> dict[str, dict[str, Any]]:
    """What the verdict rests on: for ``reset`` and ``step``, the last body sent and the start
    of its answer (over HTTP or ``/ws``)."""
    found: dict[str, dict[str, Any]] = {}
    for exchange in attempt.result.transcript if attempt else ():
        name = exchange.path.removeprefix("/")
        if name in ("reset", "step"):
            found[name] = {
                "request": f"{exchange.method} {exchange.path}",
                "sent": exchange.sent,
                "status": exchange.status,
                "answer": exchange.body,
            }
    return found


@dataclass(frozen=True)
class VerifyResult:
    """The verdict on one candidate, the stage it reached, and every domain attempt."""

    env: str
    space_id: str
    state: SpaceState
    outcome: Outcome
    reason: str
    attempts: tuple[DomainAttempt, ...] = ()
    probe_seconds: float = 0.0
    our_error: bool = False  # INCONCLUSIVE for a cause on our side; the reason says what to do
    needs: tuple[str, ...] = ()  # INCONCLUSIVE: the env lacked these declared needs
    declared_needs: tuple[str, ...] = ()  # everything its plugin says it needs
    stopped: bool = False  # a rehearsal paused the Space once this verdict was in

    @property
    def success(self) -> bool:
        return self.outcome is Outcome.PASS

    @property
    def decisive(self) -> DomainAttempt | None:
        """The attempt the outcome rests on: a pass, else the first inconclusive, else the last."""
        for outcome in (Outcome.PASS, Outcome.INCONCLUSIVE):
            found = next((a for a in self.attempts if a.result.outcome is outcome), None)
            if found is not None:
                return found
        return self.attempts[-1] if self.attempts else None

    @property
    def ledger_status(self) -> Literal["done", "failed"]:
        """PASS and FAIL are done; INCONCLUSIVE is "failed", so a rerun verifies again."""
        return "failed" if self.outcome is Outcome.INCONCLUSIVE else "done"

    @property
    def verdict(self) -> Verdict:
        return Verdict(self.env, self.space_id, self.outcome.value, self.state.sha, self.reason)

    def as_json(self) -> dict[str, Any]:
        """The upstream verifier's fields plus outcome and timings (no ``env``: the ledger
        records under the env's name)."""
        decisive = self.decisive
        return {
            "space": self.space_id,
            "space_id": self.space_id,
            "stage": self.state.stage,
            "domain": decisive.domain if decisive else None,
            "runtime_error": self.state.error,
            "checks": {
                f"{e.method} {e.path}": e.status
                for e in (decisive.result.transcript if decisive else ())
            },
            "success": self.success,
            "domain_attempts": [a.as_json() for a in self.attempts],
            "outcome": self.outcome.value,
            "reason": self.reason,
            "our_error": self.our_error,
            "needs": list(self.needs),
            "declared_needs": list(self.declared_needs),
            "stopped": self.stopped,
            "evidence": evidence(decisive),
            "commit": self.state.sha,
            "hardware": self.state.hardware,
            "timings": {
                "wait_s": round(self.state.seen_at, 3),
                "probe_s": round(self.probe_seconds, 3),
            },
        }
