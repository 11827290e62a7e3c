"""Verdicts as the steps after verification read them: from the ledger, and whether one stands.

The ``verify`` step records a verdict's fields in its ledger data (``space`` or ``space_id``,
``outcome``, ``commit``, ``reason``).
A PASS stands only for the commit it was recorded for: once the candidate has a newer head, it
must be verified again before anything is promoted, collected, lifted or cleaned up for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from releaselib.hub.client import Hub, RemoteSpace
from releaselib.ledger.ledger import Ledger
from releaselib.records import OUTCOMES, Verdict

#: The exit code of ``release`` and ``verify`` when nothing FAILed but some env ended
#: INCONCLUSIVE: nothing decisive for it, so nothing was promoted or pinned for it.
INCONCLUSIVE_EXIT = 5


def exit_status(outcomes: Iterable[str]) -> tuple[int, str]:
    """The exit code for envs that ended with ``outcomes``, and what to say about it: 1 if any
    FAILed, else :data:`INCONCLUSIVE_EXIT` if any is INCONCLUSIVE, else 0."""
    ended = list(outcomes)
    if "FAIL" in ended:
        return 1, ""
    unsure = ended.count("INCONCLUSIVE")
    if unsure:
        envs = "env" if unsure == 1 else "envs"
        return INCONCLUSIVE_EXIT, f"nothing decisive for {unsure} {envs}: see the remedies; rerun"
    return 0, ""


def from_ledger(ledger: Ledger) -> dict[str, Verdict]:
    """Env -> the verdict its ``verify`` record holds (INCONCLUSIVE ones are recorded as failed
    steps, so a rerun verifies again, and are read all the same)."""
    verdicts: dict[str, Verdict] = {}
    for env in ledger.envs():
        record = ledger.env(env).get("verify")
        data = record.data if record is not None else {}
        space_id = data.get("space_id") or data.get("space")
        if data.get("outcome") not in OUTCOMES or not space_id:
            continue
        verdicts[env] = Verdict(
            env=env,
            space_id=str(space_id),
            outcome=str(data["outcome"]),
            commit=data.get("commit"),
            reason=str(data.get("reason") or ""),
        )
    return verdicts


def not_passing(verdict: Verdict | None) -> str | None:
    """Why a verdict is no PASS (None when it is one)."""
    if verdict is None:
        return "not verified"
    if verdict.outcome != "PASS":
        return f"{verdict.outcome}: {verdict.reason or 'no reason recorded'}"
    if verdict.commit is None:
        return "the PASS names no commit; verify the candidate again"
    return None


def standing_pass(hub: Hub, verdict: Verdict | None) -> tuple[RemoteSpace | None, str | None]:
    """The candidate Space and None when ``verdict`` is a PASS for its current head, else
    (whatever was found, why the PASS does not count)."""
    reason = not_passing(verdict)
    if reason is not None or verdict is None:
        return None, reason
    space = hub.space(verdict.space_id)
    if space is None:
        return None, f"candidate {verdict.space_id} not found"
    if space.sha != verdict.commit:
        return space, (
            f"the PASS is for commit {str(verdict.commit)[:12]} but {verdict.space_id} is now at "
            f"{str(space.sha)[:12]}; verify it again"
        )
    return space, None


def select(verdicts: Mapping[str, Verdict], envs: list[str] | None) -> dict[str, Verdict | None]:
    """The verdicts of ``envs`` (all when None or empty); an env without one maps to None."""
    names = envs or sorted(verdicts)
    return {env: verdicts.get(env) for env in names}
