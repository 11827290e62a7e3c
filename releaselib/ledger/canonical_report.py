"""The briefing's account of each canonical Space this release promoted: the commit it held
before, the commit promotion made, the verdict after promotion, and whether it was rolled back
(automatically by ``release``/``promote --verify``, or by the ``rollback`` task), with the
evidence and what differs between the canonical and its candidate."""

from __future__ import annotations

from typing import Any

from releaselib.ledger.ledger import EnvEntry, Ledger
from releaselib.ledger.step_records import baselines


def canonical_rows(ledger: Ledger, entry: EnvEntry) -> list[dict[str, Any]]:
    """One row per canonical target the env's standing promote record made hold its
    candidate."""
    promote, checked, rolled = (entry.get(s) for s in ("promote", "canonical", "rollback"))
    if promote is None:
        return []
    recorded = baselines(ledger, entry.name)
    checks = {c["target"]: c for c in (checked.data.get("checks", []) if checked else [])}
    if checked is not None and checked.data.get("promoted_at") != promote.at:
        checks = {}  # a check of an earlier promotion
    restores = {r["target"]: r for r in (rolled.data.get("restores", []) if rolled else [])}
    pinned = str(ledger.to_json().get("release", {}).get("sha") or "") or None
    staged = entry.get("stage")
    lock = (staged.data.get("lock") or {}) if staged else {}
    rows = []
    for p in promote.data.get("promotions", []):
        if p.get("status") not in ("promoted", "current"):
            continue
        target = p["target"]
        check, restore = checks.get(target, {}), restores.get(target, {})
        automatic = check.get("rollback") or {}
        by_task = restore.get("status") == "restored" and rolled.at > promote.at  # type: ignore[union-attr]
        rows.append(
            {
                "env": entry.name,
                "target": target,
                "previous": (recorded.get(target) or p.get("before") or {}).get("head"),
                "promoted": check.get("promoted") or p.get("pushed"),
                "openenv_sha": pinned,  # the release's one pin (releaselib.release_pin)
                "lock_digest": lock.get("digest"),
                "outcome": check.get("outcome") or "not verified",
                "reason": check.get("reason") or "",
                "evidence": check.get("evidence") or {},
                "differences": list(check.get("differences") or []),
                "rolled_back": bool(check.get("rolled_back")) or by_task,
                "rolled_back_by": "rollback" if by_task else "release" if automatic else None,
                "rollback_commit": restore.get("commit") if by_task else automatic.get("commit"),
            }
        )
    return rows
