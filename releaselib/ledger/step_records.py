"""What each step records into the release's ledger: the one writer per step, whether the step
runs alone as a task or inside ``release`` (verify's verdicts go through
``verify.candidates.record_result``, here called by ``record_verdicts``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from releaselib.ledger.ledger import Ledger
from releaselib.records import StagedSpace, Verdict

if TYPE_CHECKING:
    from releaselib.hub.deploy import Deployed
    from releaselib.publish.canonical_check import CanonicalCheck
    from releaselib.publish.cleanup import Cleanup
    from releaselib.publish.collection import CollectionSync
    from releaselib.publish.pin_step import PinDecision
    from releaselib.publish.promote import Promotion
    from releaselib.publish.rollback import Restore
    from releaselib.verify.candidates import VerifyResult


def verified_at(ledger: Ledger, env: str) -> str | None:
    """When the verdict the later steps act on was recorded (their records name it, so a new
    verdict makes them due again)."""
    verify = ledger.env(env).get("verify")
    return verify.at if verify is not None else None


def record_stage(ledger: Ledger, result: StagedSpace) -> bool:
    """Record a staging result unless the ledger already has it done for the same content; an
    env whose content changed is redone from deploy. True when something was recorded."""
    known = ledger.env(result.env).manifest_hash
    if (
        result.ok
        and known == result.manifest_hash
        and ledger.done(result.env, "stage", result.manifest_hash)
    ):
        return False
    if known is not None and known != result.manifest_hash:
        ledger.invalidate_from(result.env, "deploy")
    ledger.record(
        result.env,
        "stage",
        status="done" if result.ok else "failed",
        manifest_hash=result.manifest_hash or None,
        space_id=result.space_id,
        files=result.files,
        bytes=result.bytes,
        fixes=[f.as_json() for f in result.fixes],
        error=result.error,
        allowed_secrets=[f.as_json() for f in result.allowed_secrets],
        lock=result.lock.as_json() if result.lock is not None else None,
    )
    return True


def record_deploy(ledger: Ledger, d: Deployed) -> None:
    """Record what deploying one env did (its head sha is what verify checks)."""
    ledger.record(
        d.staged.env,
        "deploy",
        status="done" if d.ok else "failed",
        space_id=d.space_id,
        created=d.created,
        commit=d.commit,
        head=d.head,
        unchanged=d.unchanged,
        files_sent=d.files_sent,
        bytes_sent=d.bytes_sent,
        note=d.note,
        error=d.error,
    )


#: What ``record_verdicts`` gives for a Space that is not its env's candidate in this release.
NOT_RECORDED = "not recorded"


def candidate_of(ledger: Ledger, env: str) -> str:
    """``env``'s candidate in this ledger's release: the Space its deploy recorded (``--repo-id``
    included), else ``<namespace>/<env><suffix>``."""
    deploy = ledger.env(env).get("deploy")
    if deploy is not None and deploy.data.get("space_id"):
        return str(deploy.data["space_id"])
    release = ledger.to_json()["release"]
    return f"{release['namespace']}/{env}{release['suffix']}"


def record_verdicts(
    ledger: Ledger, results: Sequence[VerifyResult], **extra: Any
) -> list[tuple[VerifyResult, str | None]]:
    """Record each result as its env's verify step; with each, None when it became the env's
    verdict, else the recorded verdict that stands (an INCONCLUSIVE attempt is no evidence), or
    ``NOT_RECORDED`` for a Space that is not the env's candidate (a canonical Space, another
    release's): its verdict is no evidence about this release."""
    from releaselib.verify.candidates import record_result

    kept: list[tuple[VerifyResult, str | None]] = []
    for result in results:
        if result.space_id.lower() != candidate_of(ledger, result.env).lower():
            kept.append((result, NOT_RECORDED))
        elif record_result(ledger, result, **extra):
            kept.append((result, None))
        else:
            standing = ledger.env(result.env).get("verify")
            kept.append((result, str(standing.data.get("outcome")) if standing else None))
    return kept


def record_recovery(
    ledger: Ledger, env: str, recovery: Mapping[str, Any], results: Sequence[VerifyResult]
) -> None:
    """Record ``recover``: the verdict of the recovered candidate with what recovery did; a
    candidate still not ready is a failed verify, or an attempt when a PASS or FAIL stands."""
    if results:
        record_verdicts(ledger, results, by="recover", recovery=dict(recovery))
        return
    standing = ledger.env(env).get("verify")
    keep = standing is not None and standing.data.get("outcome") in ("PASS", "FAIL")
    (ledger.attempt if keep else ledger.record)(
        env, "verify", status="failed", recovery=dict(recovery)
    )


def baselines(ledger: Ledger, env: str) -> dict[str, dict[str, Any]]:
    """``env``'s canonical Spaces as promote found them before this release first wrote each
    (target -> :class:`~releaselib.publish.canonical_state.SpaceState` as JSON): the earliest
    record of a target wins, so a rerun's promote never replaces it with the release's own."""
    out: dict[str, dict[str, Any]] = {}
    for record in ledger.history(env, "baseline"):
        for target, state in (record.data.get("targets") or {}).items():
            out.setdefault(str(target), dict(state))
    return out


def record_baselines(ledger: Ledger, promotions: Sequence[Promotion]) -> None:
    """Before promote writes: each planned target's state, unless this release recorded the
    target before (see :func:`baselines`)."""
    for env in dict.fromkeys(p.env for p in promotions):
        known = baselines(ledger, env)
        new = {
            p.target: p.before.as_json()
            for p in promotions
            if p.env == env and p.before is not None and p.target not in known
        }
        if new:
            ledger.record(env, "baseline", targets={**known, **new})


def record_promotions(
    ledger: Ledger,
    envs: Sequence[str],
    promotions: Sequence[Promotion],
    verdicts: Mapping[str, Verdict],
) -> dict[str, tuple[bool, str]]:
    """One promote record per env of ``envs`` and of ``promotions``: promoted when every
    canonical target holds the candidate, else held and why. Returns env -> (promoted, reason)."""
    return {
        env: record_promotion(
            ledger,
            env,
            [p for p in promotions if p.env == env],
            passed=env in verdicts and verdicts[env].outcome == "PASS",
        )
        for env in dict.fromkeys([*envs, *(p.env for p in promotions)])
    }


def record_promotion(
    ledger: Ledger, env: str, promotions: Sequence[Promotion], *, passed: bool
) -> tuple[bool, str]:
    """Record one env's promote step from its promotions (one per canonical target)."""
    promoted = passed and bool(promotions) and all(p.done for p in promotions)
    missing = [p.target for p in promotions if p.status == "held" and p.create]
    reason = "" if promoted else held_reason(promotions, missing)
    if passed and not promotions:
        reason = "no canonical Space"
    ledger.record(
        env,
        "promote",
        status="failed" if any(p.status == "failed" for p in promotions) else "done",
        decision="promoted" if promoted else "held",
        targets=[p.target for p in promotions if p.done],
        reason=reason,
        missing=missing,
        promotions=[p.as_json() for p in promotions],
        verified_at=verified_at(ledger, env),
    )
    return promoted, reason


def held_reason(promotions: Sequence[Promotion], missing: Sequence[str]) -> str:
    """Why an env's canonical Spaces were not all promoted: each distinct reason once (an env
    with several targets is often held for the same reason at each)."""
    if missing:
        named = ", ".join(missing)
        first = f"canonical {named} missing, pass --create-missing"
        others = [p.reason for p in promotions if not p.done and p.target not in missing]
        return "; ".join(dict.fromkeys([first, *filter(None, others)]))
    return "; ".join(dict.fromkeys(p.reason for p in promotions if p.reason and not p.done))


def record_canonical_checks(ledger: Ledger, checks: Sequence[CanonicalCheck]) -> None:
    """One ``canonical`` record per env checked: its canonicals' verdicts after promotion and
    any rollback, against the promote record they checked (``promoted_at``). Done when every
    canonical PASSed."""
    for env in dict.fromkeys(c.env for c in checks):
        mine = [c for c in checks if c.env == env]
        promote = ledger.env(env).get("promote")
        ledger.record(
            env,
            "canonical",
            status="done" if all(c.outcome == "PASS" for c in mine) else "failed",
            promoted_at=promote.at if promote is not None else None,
            checks=[c.as_json() for c in mine],
            rolled_back=[c.target for c in mine if c.rolled_back],
            verified_at=verified_at(ledger, env),
        )


def record_rollback(ledger: Ledger, restores: Sequence[Restore]) -> None:
    """One ``rollback`` record per env the rollback task restored (a plan is not recorded)."""
    for env in dict.fromkeys(r.env for r in restores):
        mine = [r for r in restores if r.env == env]
        ledger.record(
            env,
            "rollback",
            status="failed" if any(r.status == "failed" for r in mine) else "done",
            restores=[r.as_json() for r in mine],
        )


def record_collection(
    ledger: Ledger, versioned: CollectionSync, verdicts: Mapping[str, Verdict]
) -> None:
    """A collection record for each PASSed env of ``verdicts``: done when the versioned
    collection holds its candidate, else failed."""
    held = set(versioned.added) | set(versioned.present)
    for env, verdict in verdicts.items():
        if verdict.outcome != "PASS":
            continue
        ledger.record(
            env,
            "collection",
            status="done" if verdict.space_id in held else "failed",
            slug=versioned.slug,
            added=verdict.space_id in versioned.added,
            present=verdict.space_id in versioned.present,
            verified_at=verified_at(ledger, env),
        )


def record_pins(ledger: Ledger, decisions: Sequence[PinDecision]) -> None:
    """One pin record per env decided (pinned, lifted, left, or failed)."""
    for d in decisions:
        data = {k: v for k, v in d.as_json().items() if k != "env"}
        ledger.record(
            d.env,
            "pin",
            status="failed" if d.error else "done",
            verified_at=verified_at(ledger, d.env),
            **data,
        )


def record_cleanup(ledger: Ledger, results: Sequence[Cleanup]) -> None:
    """A cleanup record for each candidate that is archived or deleted now."""
    for r in results:
        if r.status in ("done", "clean"):
            ledger.record(r.env, "cleanup", action=r.action, result=r.status, steps=list(r.steps))
