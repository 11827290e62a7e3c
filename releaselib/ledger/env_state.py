"""An env's verdict and decision as its ledger records say now, checked against what the Hub
holds: a promotion a rollback undid, or one a later release's promotion replaced, is not
"promoted"; a pin a later release lifted is not "pinned"."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from releaselib.ledger.ledger import EnvEntry, StepRecord

#: the outcome of an env with no verdict: never deployed, or deployed and never verified
NOT_DEPLOYED, NOT_VERIFIED = "not deployed", "not verified"
#: the decision of an env that ``promote`` has not decided on its standing verdict
NOT_PROMOTED = "not promoted yet"
ROLLED_BACK, SUPERSEDED = "rolled back", "superseded by a later release"


def data(entry: EnvEntry, step: str) -> Mapping[str, Any]:
    record = entry.get(step)
    return record.data if record is not None else {}


def outcome(entry: EnvEntry) -> str:
    """PASS, FAIL or INCONCLUSIVE as verify recorded it (FAIL: stage or deploy failed); an env
    without a verdict is :data:`NOT_DEPLOYED` or :data:`NOT_VERIFIED`, never INCONCLUSIVE."""
    verify = entry.get("verify")
    if verify is not None and verify.data.get("outcome") in {"PASS", "FAIL", "INCONCLUSIVE"}:
        return str(verify.data["outcome"])
    stage, deploy = entry.get("stage"), entry.get("deploy")
    if (stage and stage.status == "failed") or (deploy and deploy.status == "failed"):
        return "FAIL"
    return NOT_VERIFIED if deploy is not None else NOT_DEPLOYED


def current_promote(entry: EnvEntry) -> Mapping[str, Any]:
    """The promote record when it acted on the verdict that stands now, else empty: before
    ``promote`` runs, or after a later verdict made it due again, nothing it recorded is true
    of this candidate (a record without ``verified_at`` predates the field and counts)."""
    promote, verify = entry.get("promote"), entry.get("verify")
    if promote is None:
        return {}
    acted_on = promote.data.get("verified_at", verify.at if verify is not None else None)
    return promote.data if acted_on == (verify.at if verify is not None else None) else {}


def rolled_back(entry: EnvEntry) -> dict[str, tuple[str, str | None]]:
    """Canonical -> (by whom, the commit that restored it) for each canonical of the standing
    promotion that a rollback undid: ``release`` (its canonical FAILed after promotion) or the
    ``rollback`` task."""
    promote, checked, task = (entry.get(s) for s in ("promote", "canonical", "rollback"))
    if promote is None or not current_promote(entry):
        return {}
    undone: dict[str, tuple[str, str | None]] = {}
    if checked is not None and checked.data.get("promoted_at") == promote.at:
        for check in checked.data.get("checks", []):
            if check.get("rolled_back"):
                commit = (check.get("rollback") or {}).get("commit")
                undone[str(check.get("target"))] = ("release", commit)
    if task is not None and (task.at or "") > (promote.at or ""):
        for restore in task.data.get("restores", []):
            if restore.get("status") == "restored":
                undone[str(restore.get("target"))] = ("rollback", restore.get("commit"))
    return undone


def heads_of(spaces: Iterable[Any]) -> dict[str, str | None]:
    """Space id -> the commit at its head (its repository's, not the one its runtime still
    runs while a new commit builds), from ``Hub.list_spaces`` results."""
    return {s.id: s.sha or None for s in spaces}


def superseded(entry: EnvEntry, heads: Mapping[str, str | None] | None) -> dict[str, str]:
    """Canonical -> the commit it holds now, for each canonical the standing promotion made
    hold its candidate that holds another commit now (``heads``: the Hub listing's, Space id
    -> head; a canonical it lacks is not judged)."""
    if heads is None:
        return {}
    undone = rolled_back(entry)
    moved = {}
    for p in current_promote(entry).get("promotions", []):
        target = str(p.get("target"))
        made = p.get("pushed") or (p.get("before") or {}).get("head")
        now = heads.get(target)
        held = p.get("status") in ("promoted", "current") and target not in undone
        if held and made and now and now != made:
            moved[target] = now
    return moved


def pin_stands(repo: Path | None, pin: StepRecord) -> bool:
    """Whether each line the pin record's diff added is still in the checkout ``repo`` (an
    unknown checkout, ``None``, cannot say otherwise: standing)."""
    if repo is None or not repo.is_dir():
        return True
    path, added = None, []
    for line in str(pin.data.get("diff") or "").splitlines():
        if line.startswith("+++ b/"):
            path = line.removeprefix("+++ b/")
        elif line.startswith("+") and path and line[1:].strip():
            added.append((path, line[1:].strip()))
    for rel, want in added:
        try:
            have = {x.strip() for x in (repo / rel).read_text(encoding="utf-8").splitlines()}
        except (OSError, UnicodeDecodeError):
            return False
        if want not in have:
            return False
    return True


def decision(
    entry: EnvEntry, pin: StepRecord | None, heads: Mapping[str, str | None] | None = None
) -> str:
    """promoted, rolled back, superseded, pinned, held, or not promoted yet (``promote`` has
    not decided on the standing verdict)."""
    promote = current_promote(entry)
    if promote.get("decision") == "promoted":
        if rolled_back(entry):
            return ROLLED_BACK
        return SUPERSEDED if superseded(entry, heads) else "promoted"
    if pin is not None or data(entry, "pin").get("decision") == "pinned":
        return "pinned"
    return "held" if promote else NOT_PROMOTED


def undone_reason(entry: EnvEntry, heads: Mapping[str, str | None] | None) -> str:
    """What undid the standing promotion: each canonical rolled back (by whom, to which
    commit), or holding a later release's commit."""
    rolled = [
        f"{target} rolled back by {by} (restored as {(commit or '-')[:12]})"
        for target, (by, commit) in rolled_back(entry).items()
    ]
    moved = [f"{target} now holds {now[:12]}" for target, now in superseded(entry, heads).items()]
    return "; ".join(rolled or [f"{', '.join(moved)}, a later release's promotion"])


def decision_reason(
    entry: EnvEntry,
    verdict: str,
    decided: str,
    pin: StepRecord | None,
    heads: Mapping[str, str | None] | None = None,
) -> str:
    """Why the env ended as ``decided``: what the next step needs, in words."""
    promote, verify = current_promote(entry), data(entry, "verify")
    if decided == "promoted":
        return f"into {', '.join(promote.get('targets', [])) or 'its canonical Spaces'}"
    if decided in (ROLLED_BACK, SUPERSEDED):
        return undone_reason(entry, heads)
    why = f"{verdict}: {verify.get('reason') or 'no reason recorded'}"
    if decided == "pinned":
        return why if verdict == "FAIL" or pin is None else f"pin of run {pin.run} stands; {why}"
    for step in ("stage", "deploy"):
        record = entry.get(step)
        if record is not None and record.status == "failed":
            return f"{step} failed: {record.data.get('error') or 'no error recorded'}"
    if entry.get("verify") is None:
        return verdict if entry.get("deploy") is None else "not verified yet"
    if verdict != "PASS":
        return why
    return str(promote.get("reason") or "promote has not run on this PASS")
