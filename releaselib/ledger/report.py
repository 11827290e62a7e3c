"""The release briefing: a JSON report rebuilt from the ledger's whole history, and its Markdown.

Whatever sequence of runs made the ledger, the briefing says for each env its current verdict
and the run that recorded it, its decision and why, the pin that still stands in the checkout,
and evidence only for canonical Spaces that now hold the candidate. Its commands run as printed.
Each time it is written (:func:`current_report`) it also reads one Hub listing, so the runtime
stage it shows is the Hub's now (PAUSED after ``cleanup --archive``) and each canonical Space is
named with the commit it holds.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from releaselib.config import ReleaseConfig
from releaselib.files import write_atomic
from releaselib.hub.client import Hub, RemoteSpace
from releaselib.ledger.canonical_report import canonical_rows
from releaselib.ledger.commands import FROM_CHECKOUT, Commands
from releaselib.ledger.env_state import (
    current_promote,
    data,
    decision,
    decision_reason,
    heads_of,
    outcome,
    rolled_back,
    superseded,
)
from releaselib.ledger.ledger import Ledger, StepRecord
from releaselib.render import render

FAIL_REMEDY = (
    "the Space itself answered wrongly: fix the env in the checkout, then rerun release "
    "(it verifies again and lifts the pin once the env passes)"
)
PROBE_REMEDY = (
    "our side got no answer from the Space: fix what the reason names (certificates, "
    "network, timeouts, the probe), then rerun release; nothing was pinned"
)
WAIT_REMEDY = "rerun release (it verifies again), with a longer --wait if the Space was building"
#: a Space the listing lacks, when it was read without a token: the Hub lists no private Space
#: to an anonymous caller, so its absence says nothing
NO_TOKEN = "unknown: no token"
NO_TOKEN_NOTE = (
    "no Hub token: a private Space is listed only to a token that can read it, so the runtime "
    "of each private candidate is unknown; set HF_TOKEN (or run `hf auth login`) to see it"
)
NEEDS_REMEDY = (
    "verify against the real Hub, where the Space can have what its plugin says it needs; "
    "nothing was pinned"
)


def standing_pin(pins: Sequence[StepRecord]) -> StepRecord | None:
    """The pin record whose edit still stands: the last one that pinned, unless a later pin
    step lifted (or found nothing to lift)."""
    standing = None
    for record in pins:
        decision = record.data.get("decision")
        if decision == "pinned" and record.data.get("changed"):
            standing = record
        elif decision == "lifted":
            standing = None
    return standing


def evidence(verify: StepRecord | None) -> dict[str, Any]:
    """What a verify record found, and the run (or standalone task) that recorded it."""
    if verify is None:
        return {}
    found = verify.data
    by = f"run {verify.run}" if verify.run else f"standalone {found.get('by') or 'verify'}"
    return {
        "run": verify.run,
        "by": by,
        "at": verify.at,
        "commit": found.get("commit"),
        "stage": found.get("stage"),
        "hardware": found.get("hardware"),
        "domains": list(found.get("domain_attempts", [])),
        "checks": dict(found.get("checks", {})),
        "exchanges": dict(found.get("evidence", {})),  # the reset and step the verdict rests on
        "declared_needs": list(found.get("declared_needs", [])),
    }


def later_attempts(
    verifies: Sequence[StepRecord], current: StepRecord | None
) -> list[dict[str, Any]]:
    """Verify attempts recorded after the standing verdict that did not replace it."""
    since = current.at if current is not None else ""
    return [
        {**evidence(r), "outcome": r.data.get("outcome"), "reason": r.data.get("reason") or ""}
        for r in verifies
        if current is not None and (r.at or "") > since
    ]


def flip(
    ledger: Ledger, name: str, verifies: Sequence[StepRecord], undone: Collection[str] = ()
) -> dict[str, Any] | None:
    """The last promotion that flipped canonical Spaces, with the verdict it acted on (found in
    the history by its time, never the latest verdict); None if none did, or if each of its
    canonicals is ``undone`` (rolled back, or holding a later release's commit)."""
    promoted = [
        r
        for r in ledger.history(name, "promote")
        if r.data.get("decision") == "promoted" and r.data.get("targets")
    ]
    if not promoted:
        return None
    acted = promoted[-1]
    targets = [t for t in acted.data["targets"] if t not in undone]
    if not targets:
        return None
    basis = next((v for v in verifies if v.at == acted.data.get("verified_at")), None)
    return {"targets": targets, "at": acted.at, **evidence(basis)}


def env_report(
    ledger: Ledger,
    name: str,
    listed: Mapping[str, RemoteSpace] | None = None,
    *,
    anonymous: bool = False,
) -> dict[str, Any]:
    """One env's facts; ``listed`` (Space id -> the Hub listing's entry) gives its runtime now and
    its canonical Spaces' commits (None: not listed; ``anonymous``: listed without a token)."""
    entry = ledger.env(name)
    verify, deploy, stage = data(entry, "verify"), data(entry, "deploy"), data(entry, "stage")
    pins = ledger.history(name, "pin")
    pin = standing_pin(pins)
    lift = pins[-1] if pins and pins[-1].data.get("decision") == "lifted" else None
    verdict = outcome(entry)
    heads = None if listed is None else heads_of(listed.values())
    decided = decision(entry, pin, heads)
    found = evidence(entry.get("verify"))
    verifies = ledger.history(name, "verify")
    undone = {*rolled_back(entry), *superseded(entry, heads)}  # no longer hold the candidate
    flipped = flip(ledger, name, verifies, undone)
    space_id = deploy.get("space_id") or stage.get("space_id")
    return {
        "env": name,
        "space_id": space_id,
        "runtime": now_stage(listed, space_id, anonymous=anonymous),
        "canonicals": [
            {"id": target, "commit": held_commit(listed, target)}
            for target in (flipped or {}).get("targets", [])
        ],
        "commit": deploy.get("head"),
        "outcome": verdict,
        "our_error": bool(verify.get("our_error")),
        "needs": list(verify.get("needs") or []),
        "decision": decided,
        "decision_reason": decision_reason(entry, verdict, decided, pin, heads),
        "canonical_targets": list(current_promote(entry).get("targets", [])),
        "reason": verify.get("reason") or deploy.get("error") or stage.get("error") or "",
        "evidence": found,
        "stage": found.get("stage"),
        "hardware": found.get("hardware"),
        "domains": found.get("domains", []),
        "later_attempts": later_attempts(verifies, entry.get("verify")),
        "flip": flipped,
        "flip_warning": flip_warning(flipped, verdict, verify) if flipped else "",
        "pin_diff": pin.data.get("diff", "") if pin else "",
        "pin_run": pin.run if pin else None,
        "lift_diff": lift.data.get("diff", "") if lift and lift.data.get("changed") else "",
        "collected": bool(
            data(entry, "collection").get("added") or data(entry, "collection").get("present")
        ),
        "cleanup": data(entry, "cleanup").get("action"),
        "allowed_secrets": list(stage.get("allowed_secrets", [])),
        "fixes": applied_fixes(stage),
        "after_promotion": canonical_rows(ledger, entry),
        "lock": dict(stage.get("lock") or {}),  # digest, packages, python; or unlocked: why
    }


def applied_fixes(stage: Mapping[str, Any]) -> list[dict[str, str]]:
    """The plugin fixes staging applied, with their why (a ledger written before fixes carried
    their why holds bare names)."""
    return [
        {k: str(f.get(k, "")) for k in ("name", "why", "did")}
        if isinstance(f, Mapping)
        else {"name": str(f), "why": "", "did": ""}
        for f in stage.get("fixes") or []
    ]


def now_stage(
    listed: Mapping[str, RemoteSpace] | None, space_id: str | None, *, anonymous: bool = False
) -> str | None:
    """The Space's stage in the Hub listing, or why there is none (None: not listed). A Space
    an anonymous listing lacks may be private, not gone."""
    if listed is None:
        return None
    space = listed.get(space_id or "")
    if space is None:
        return NO_TOKEN if anonymous else "not on the Hub"
    return space.stage or "no runtime"


def held_commit(listed: Mapping[str, RemoteSpace] | None, space_id: str) -> str | None:
    """The commit a Space holds now, from the Hub listing."""
    space = (listed or {}).get(space_id)
    if space is None:
        return None
    return str(space.runtime.get("sha") or space.sha or "") or None


def collection_of(ledger: Ledger) -> str | None:
    """The versioned collection's slug, as the collection step recorded it."""
    slugs = [data(ledger.env(name), "collection").get("slug") for name in ledger.envs()]
    return next((str(slug) for slug in slugs if slug), None)


def inconclusive_remedy(env: Mapping[str, Any]) -> str:
    """What to do about an INCONCLUSIVE env: give it its needs, fix our side, or wait."""
    if env["needs"]:
        return NEEDS_REMEDY
    return PROBE_REMEDY if env["our_error"] else WAIT_REMEDY


def flip_warning(flipped: Mapping[str, Any], verdict: str, verify: Mapping[str, Any]) -> str:
    """A warning when the candidate a canonical now holds no longer has the PASS it acted on."""
    if verdict == "PASS" and flipped.get("commit") == verify.get("commit"):
        return ""
    now = "now fails" if verdict == "FAIL" else f"is now {verdict}"
    return (
        f"the candidate {now} ({verify.get('reason') or 'no reason recorded'}), but "
        f"{', '.join(flipped['targets'])} still hold(s) what the earlier PASS promoted"
    )


def current_report(
    hub: Hub, config: ReleaseConfig, ledger: Ledger, *, ref_reason: str | None = None
) -> dict[str, Any]:
    """The briefing as data, from the ledger and one listing of the namespace's Spaces (none
    when the ledger records no deploy: no Space of this release exists to list)."""
    deployed = any(ledger.env(name).get("deploy") for name in ledger.envs())
    spaces = hub.list_spaces(config.namespace) if deployed else []
    return build_report(
        config, ledger, ref_reason=ref_reason, spaces=spaces, anonymous=not hub.has_token
    )


def build_report(
    config: ReleaseConfig,
    ledger: Ledger,
    *,
    ref_reason: str | None = None,
    spaces: Sequence[RemoteSpace] | None = None,
    anonymous: bool = False,
) -> dict[str, Any]:
    """The briefing as data: release tuple, per-env facts, the failed and the inconclusive
    with their remedies, evidence for the canonical flips, how to reproduce. ``spaces``: the
    Hub listing that runtimes and canonical commits come from (None: shown as not listed;
    ``anonymous``: read without a token, so a private Space it lacks is unknown, not gone)."""
    listed = None if spaces is None else {s.id: s for s in spaces}
    envs = [env_report(ledger, name, listed, anonymous=anonymous) for name in ledger.envs()]
    commands = Commands(config, ledger)
    return {
        "release": {
            "namespace": config.namespace,
            "version": config.version,
            "ref": config.ref,
            "sha": config.sha,
            "pin": config.pin_label,
            "ref_reason": ref_reason or config.ref_reason,
            "dist": config.dist,
            "suffix": config.suffix,
            "base_image": config.base_image,
            "private": config.private,
        },
        "runs": len(ledger.runs()),
        "collection": collection_of(ledger),
        "envs": envs,
        "counts": {
            "outcome": dict(Counter(e["outcome"] for e in envs)),
            "decision": dict(Counter(e["decision"] for e in envs)),
            "envs": len(envs),
        },
        "failed": [
            {
                "env": e["env"],
                "reason": e["reason"],
                "run": e["evidence"].get("run"),
                "remedy": FAIL_REMEDY,
            }
            for e in envs
            if e["outcome"] == "FAIL"
        ],
        "inconclusive": [
            {
                "env": e["env"],
                "reason": f"INCONCLUSIVE: {e['reason']}" if e["reason"] else e["decision_reason"],
                "our_error": e["our_error"],
                "needs": e["needs"],
                "run": e["evidence"].get("run"),
                "remedy": inconclusive_remedy(e),
            }
            for e in envs
            if e["outcome"] == "INCONCLUSIVE"
        ],
        "unlocked": [
            {"env": e["env"], "reason": unlocked_reason(e["lock"]["unlocked"])}
            for e in envs
            if e["lock"].get("unlocked")
        ],
        "evidence": [
            {
                "env": e["env"],
                "space_id": e["space_id"],
                "warning": e["flip_warning"],
                "canonicals": e["canonicals"],
                **e["flip"],
            }
            for e in envs
            if e["flip"]
        ],
        "canonicals": [row for e in envs for row in e["after_promotion"]],
        "reproduce": [
            commands.line("release", envs=[e["env"] for e in envs]),
            commands.line("status"),
            commands.line("report"),
        ],
        # written from the ledger alone: release runs from the checkout, which finds it
        "reproduce_from": FROM_CHECKOUT if commands.needs_checkout("release") else None,
    }


def unlocked_reason(reason: str) -> str:
    """Why an env's dependencies are not locked, for a reader of the briefing."""
    if reason == "--no-lock":
        return "--no-lock: staged without a lock, so every build resolves its dependencies afresh"
    return reason


def render_briefing(report: Mapping[str, Any]) -> str:
    return render("briefing.md.j2", **report)


def write_briefing(report: Mapping[str, Any], directory: Path, stem: str) -> tuple[Path, Path]:
    """Write ``<stem>.md`` and ``<stem>.json`` atomically; return both paths."""
    markdown, as_json = directory / f"{stem}.md", directory / f"{stem}.json"
    write_atomic(markdown, render_briefing(report).encode("utf-8"))
    write_atomic(as_json, (json.dumps(report, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    return markdown, as_json
