"""A Space's state as promote and rollback need it: its head commit, its variables, and the
hardware and secret names the Hub reports (secret values are never readable, nor wanted).

``promote`` records each canonical's state before it writes anything; ``rollback`` restores the
head tree and the variables of that record; the briefing names what differs between a
candidate and its canonical (:func:`differences`). A variable whose value looks like a token
(the detectors of :func:`releaselib.errors.redact` and of staging) is recorded by name only
(``withheld``): the record is printed and written to the ledger, a token never is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from releaselib.hub.client import Hub, RemoteSpace


@dataclass(frozen=True)
class SpaceState:
    """One Space at one moment. ``head`` None: it did not exist (or held no commit);
    ``hardware``/``secrets`` None: the Hub did not say."""

    space_id: str
    head: str | None
    variables: tuple[tuple[str, str], ...] = ()
    hardware: str | None = None
    secrets: tuple[str, ...] | None = None
    withheld: tuple[str, ...] = ()  # variables recorded by name only (token-shaped values)

    def as_json(self) -> dict[str, Any]:
        return {
            "space_id": self.space_id,
            "head": self.head,
            "variables": dict(self.variables),
            "hardware": self.hardware,
            "secrets": list(self.secrets) if self.secrets is not None else None,
            "withheld": list(self.withheld),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SpaceState:
        secrets = data.get("secrets")
        return cls(
            str(data["space_id"]),
            str(data["head"]) if data.get("head") else None,
            tuple(sorted((str(k), str(v)) for k, v in (data.get("variables") or {}).items())),
            str(data["hardware"]) if data.get("hardware") else None,
            tuple(str(s) for s in secrets) if secrets is not None else None,
            tuple(str(k) for k in data.get("withheld") or ()),
        )


def hardware_of(space: RemoteSpace | None) -> str | None:
    """The hardware the Space asks for (else runs on), from its runtime."""
    hardware = (space.runtime.get("hardware") if space else None) or {}
    chosen = hardware.get("requested") or hardware.get("current")
    return str(chosen) if chosen else None


def read_state(
    hub: Hub,
    space_id: str,
    listed: RemoteSpace | None = None,
    variables: Mapping[str, str] | None = None,
) -> SpaceState:
    """``space_id``'s state now; ``listed`` (a listing's entry) and ``variables`` spare the
    requests that would fetch them again."""
    space = listed if listed is not None else hub.space(space_id)
    if space is None or space.sha is None:
        return SpaceState(space_id, None)
    held = variables if variables is not None else hub.variables(space_id)
    withheld = tuple(sorted(k for k, v in held.items() if token_shaped(v)))
    return SpaceState(
        space_id,
        space.sha,
        tuple(sorted((k, v) for k, v in held.items() if k not in withheld)),
        hardware_of(space),
        hub.secret_names(space_id),
        withheld,
    )


def token_shaped(value: str) -> bool:
    """Whether ``value`` holds a token by staging's detectors (which include
    :func:`releaselib.errors.redact`)."""
    from releaselib.stage.secretscan import redact_secrets  # detect-secrets is slow to import

    return redact_secrets(value) != value


def differences(candidate: SpaceState, canonical: SpaceState) -> list[str]:
    """What differs between a candidate and its canonical, in words (variables by key and
    value, hardware, secret names); [] when nothing the Hub shows does."""
    out = []
    ours, theirs = dict(candidate.variables), dict(canonical.variables)
    withheld = {*candidate.withheld, *canonical.withheld}
    for key in sorted((ours.keys() | theirs.keys()) - withheld):
        if ours.get(key) != theirs.get(key):
            out.append(
                f"variable {key}: candidate {_shown(ours.get(key))}, "
                f"canonical {_shown(theirs.get(key))}"
            )
    if candidate.hardware != canonical.hardware:
        out.append(
            f"hardware: candidate {candidate.hardware or 'unknown'}, "
            f"canonical {canonical.hardware or 'unknown'}"
        )
    if candidate.secrets is not None and canonical.secrets is not None:
        only_ours = sorted(set(candidate.secrets) - set(canonical.secrets))
        only_theirs = sorted(set(canonical.secrets) - set(candidate.secrets))
        if only_ours:
            out.append(f"secrets only the candidate has: {', '.join(only_ours)}")
        if only_theirs:
            out.append(f"secrets only the canonical has: {', '.join(only_theirs)}")
    return out


def _shown(value: str | None) -> str:
    """A variable's value as the briefing may show it (a secret in it redacted)."""
    if value is None:
        return "unset"
    from releaselib.stage.secretscan import redact_secrets  # detect-secrets is slow to import

    return repr(redact_secrets(value))
