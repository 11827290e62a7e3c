"""The pin step: decide per env from its verdict, then pin or lift (:mod:`releaselib.publish.pin`).

A FAILed env is pinned below the release (whatever commit the FAIL was for: a failed env stays
pinned until a fix is committed and verified). An env whose PASS stands for its candidate's
current head has the pins of earlier releases lifted. INCONCLUSIVE and unverified envs, and
PASSes for an older commit, are left as they are and reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from releaselib.config import ReleaseConfig
from releaselib.errors import ReleaseError
from releaselib.hub.client import Hub
from releaselib.publish.pin import PinResult, lift_env_pin, pin_env
from releaselib.records import Verdict
from releaselib.verify.verdicts import select, standing_pass

Decision = Literal["pin", "lift", "leave"]


@dataclass(frozen=True)
class PinDecision:
    """What the pin step decided for one env, why, and what the edit did."""

    env: str
    decision: Decision
    reason: str
    result: PinResult | None = None
    error: str | None = None

    @property
    def changed(self) -> bool:
        return self.result is not None and self.result.changed

    def as_json(self) -> dict[str, Any]:
        """The ledger's form: ``decision`` is ``pinned`` for a pinned env (the report reads it)."""
        result = self.result
        return {
            "env": self.env,
            "decision": {"pin": "pinned", "lift": "lifted", "leave": "left"}[self.decision],
            "reason": self.reason,
            "changed": self.changed,
            "path": result.path if result else None,
            "diff": result.diff if result else "",
            "error": self.error,
        }


def pin_envs(
    hub: Hub,
    config: ReleaseConfig,
    verdicts: Mapping[str, Verdict],
    *,
    envs: list[str] | None = None,
) -> list[PinDecision]:
    """Pin the FAILed envs and lift the pins of passing ones in the checkout ``config.repo``."""
    decisions = []
    for env, verdict in select(verdicts, envs).items():
        if verdict is not None and verdict.outcome == "FAIL":
            decision: Decision = "pin"
            reason = f"FAIL: {verdict.reason or 'no reason recorded'}"
        else:
            _, held = standing_pass(hub, verdict)
            decision, reason = ("leave", held) if held is not None else ("lift", "PASS")
        if decision == "leave":
            decisions.append(PinDecision(env, decision, reason))
            continue
        edit = pin_env if decision == "pin" else lift_env_pin
        try:
            result = edit(config.repo, env, version=config.version)
        except ReleaseError as exc:
            decisions.append(PinDecision(env, decision, reason, error=exc.one_line()))
            continue
        decisions.append(PinDecision(env, decision, reason, result))
    return decisions
