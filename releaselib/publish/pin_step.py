"""The pin step: decide per env from its verdict, then pin or lift (:mod:`releaselib.publish.pin`).

A FAILed env is pinned below the release (whatever commit the FAIL was for: a failed env stays
pinned until a fix is committed and verified). An env whose PASS stands for its candidate's
current head has the pins of earlier releases lifted. INCONCLUSIVE and unverified envs, and
PASSes for an older commit, are left as they are and reported.

Verdicts from the embedded Hub (``releaselib.localhub``) are a stand-in's: pin writes a checkout
on them only for a rehearsal's private copy, or when the user passes :data:`EMBEDDED_FLAG`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from releaselib.config import ReleaseConfig
from releaselib.errors import ReleaseError, UsageError
from releaselib.hub.client import Hub
from releaselib.hub.embedded import embedded_builder
from releaselib.publish.pin import EnvEdit, PinResult, plan_edit, refuse_uncommitted, write_edit
from releaselib.publish.pin_files import tool_written_pins
from releaselib.records import Verdict
from releaselib.verify.verdicts import select, standing_pass

Decision = Literal["pin", "lift", "leave"]
#: The flag that lets ``pin``/``release`` write a checkout on the embedded Hub's verdicts.
EMBEDDED_FLAG = "--allow-embedded-hub"


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
    embedded_ok: bool = False,
    commit: bool = False,
) -> list[PinDecision]:
    """Pin the FAILed envs and lift the pins of passing ones in the checkout ``config.repo``.

    A UsageError naming :data:`EMBEDDED_FLAG`, before any write, when there is something to
    write and ``hub`` is the embedded Hub, unless ``embedded_ok`` (a rehearsal's private copy,
    or the flag given). With ``commit`` (the pins will be committed), a UsageError naming
    each file to write that holds uncommitted changes of the user's, before any write."""
    planned: list[tuple[str, Decision, str]] = []
    for env, verdict in select(verdicts, envs).items():
        if verdict is not None and verdict.outcome == "FAIL":
            decision: Decision = "pin"
            reason = f"FAIL: {verdict.reason or 'no reason recorded'}"
        else:
            _, held = standing_pass(hub, verdict)
            decision, reason = ("leave", held) if held is not None else ("lift", "PASS")
        planned.append((env, decision, reason))
    if not embedded_ok and any(writes(config, env, decision) for env, decision, _ in planned):
        refuse_embedded(hub, config)
    decisions: dict[str, PinDecision] = {}
    edits: list[EnvEdit] = []
    for env, decision, reason in planned:
        if decision == "leave":
            decisions[env] = PinDecision(env, decision, reason)
            continue
        try:
            edits.append(plan_edit(config.repo, env, decision, config.version))
        except ReleaseError as exc:
            decisions[env] = PinDecision(env, decision, reason, error=exc.one_line())
    if commit:
        refuse_uncommitted(config.repo, edits)
    reasons = {env: reason for env, _, reason in planned}
    for edit in edits:
        result = write_edit(edit)
        decisions[edit.env] = PinDecision(edit.env, edit.action, reasons[edit.env], result)
    return [decisions[env] for env, _, _ in planned]


def writes(config: ReleaseConfig, env: str, decision: Decision) -> bool:
    """Whether ``decision`` may change the checkout: a pin, or a lift of pins this tool wrote."""
    if decision == "lift":
        return bool(tool_written_pins(config.repo, env))
    return decision == "pin"


def refuse_embedded(hub: Hub, config: ReleaseConfig) -> None:
    """A UsageError when ``hub`` is the embedded Hub: its verdicts come from a stand-in build
    (the ``host`` builder installs nothing), so they do not decide what a checkout pins."""
    builder = embedded_builder(hub)
    if builder is not None:
        raise UsageError(
            f"pin: the verdicts come from the embedded Hub at {hub.api.endpoint} ({builder} "
            f"builder), not from the Hub; not writing the checkout {config.repo}",
            remedy=f"verify on the real Hub, rehearse (which pins a private copy), or pass "
            f"{EMBEDDED_FLAG} to write the checkout anyway",
        )
