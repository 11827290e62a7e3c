"""Verify candidate Spaces: wait until each is terminal, then probe its domains concurrently.

A candidate passes only when a real ``POST /reset`` and a schema-correct ``POST /step`` succeed
on one of its READY domains. Every READY domain is probed (the others only when none is READY)
with the token's ``Authorization`` header, since private Spaces answer 404 without it, and
every attempt is kept. A Space is probed as soon as a poll shows it ready, on a pool of probe
threads (probing is I/O-bound: one thread per Space, up to :data:`PROBE_JOBS`), so a verify
takes about as long as its slowest Space.

FAIL rests only on the Space's own evidence: an HTTP answer from its domain (see
:mod:`releaselib.verify.probe`), a Hub-reported BUILD_ERROR or RUNTIME_ERROR with its errorMessage,
or a
RUNNING Space whose every READY domain answers an HTTP error for ``/health`` (a 401/403, 429 or
redirect is never the env's, on any path). Anything else that stops a verdict is INCONCLUSIVE,
with ``our_error`` set when the cause is on our side; it never replaces a standing verdict.

An env's declared needs (secrets, hardware, outside services) go with every result
(``declared_needs``). An error the env reports that names one of them is INCONCLUSIVE naming it
(see :mod:`releaselib.verify.usable`). In a rehearsal, any FAIL of an env with needs is
INCONCLUSIVE naming them, since the rehearsal cannot give them, except a BUILD_ERROR: the build
failed before any need could matter (see :func:`rehearsed`). A rehearsal also pauses each Space
once its verdict is in (``stop_judged``), so it leaves the embedded Hub's Spaces in flight.
"""

from __future__ import annotations

import dataclasses
import ssl
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx

from releaselib.errors import HubError
from releaselib.hub.client import Hub
from releaselib.hub.runtime import Domain, SpaceState, watch
from releaselib.ledger.ledger import Ledger
from releaselib.plugins import PluginRegistry
from releaselib.records import Probe
from releaselib.space_ids import CandidateId
from releaselib.verify.outcome import HOST_INSTALLS_NOTHING, uninstalled
from releaselib.verify.probe import Outcome, probe_base_url
from releaselib.verify.results import DomainAttempt as DomainAttempt  # re-exported
from releaselib.verify.results import VerifyResult as VerifyResult  # re-exported
from releaselib.verify.usable import needs_named

DEFAULT_TIMEOUT = 20.0
#: Spaces probed at once unless told otherwise: every Space, up to this ceiling, which bounds the
#: connections held open to the Hub's Space domains (``--probe-jobs`` lowers or raises it).
PROBE_JOBS = 64
#: Hub-reported stages that are the Space's own failure (with its errorMessage).
SPACE_FAILURES = frozenset({"BUILD_ERROR", "RUNTIME_ERROR"})

#: ``on_update(space_id, status)``: a Space's stage while waiting, then "probing", then outcome.
Update = Callable[[str, str], None]


def env_of(space_id: str, suffix: str) -> str:
    """The env a candidate Space holds: its name minus the release suffix."""
    name = space_id.split("/", 1)[-1]
    return name[: -len(suffix)] if suffix and name.endswith(suffix) and name != suffix else name


def candidates(
    hub: Hub,
    *,
    namespace: str,
    suffix: str,
    envs: Iterable[str] = (),
    space_ids: Iterable[str] = (),
) -> list[str]:
    """``space_ids`` plus ``<namespace>/<env><suffix>`` for each env; with neither, every Space
    of ``namespace`` whose name ends with ``suffix`` (one listing)."""
    chosen = [*space_ids, *(CandidateId.of(namespace, env, suffix) for env in envs)]
    if not chosen:
        listed = hub.list_spaces(namespace, search=suffix)
        chosen = sorted(i for s in listed if (i := CandidateId.parse(s.id, suffix)) is not None)
    return list(dict.fromkeys(chosen))


@dataclass(frozen=True)
class ProbePlan:
    """How one env is probed and judged: its per-request timeout, its plugin's probes (sent in
    order), and what its plugin says it needs."""

    env: str
    timeout: float
    probes: tuple[Probe, ...] = ()
    needs: tuple[str, ...] = ()


def verify_spaces(
    hub: Hub,
    space_ids: Sequence[str],
    *,
    suffix: str,
    registry: PluginRegistry,
    timeout: float = DEFAULT_TIMEOUT,
    wait: float = 600.0,
    jobs: int | None = None,
    interval: float = 2.0,
    tls: ssl.SSLContext | None = None,
    on_update: Update | None = None,
    rehearsal: str | None = None,
    envs: Mapping[str, str] | None = None,
    stop_judged: bool = False,
) -> list[VerifyResult]:
    """Wait for each Space to be terminal, probe the ready ones, and return one result each,
    in input order. ``timeout`` is per request; an env's plugin may ask for a longer one.
    ``jobs`` probe threads (default :func:`probe_jobs`). ``rehearsal`` names the embedded
    Hub's builder when this is a rehearsal (see :func:`rehearsed`). ``envs`` names the env of
    a Space whose name is not ``<env><suffix>`` (a canonical Space after promotion).
    ``stop_judged``: pause each Space once judged (:func:`stop_after_verdict`); only a
    rehearsal asks, never against a real Hub."""
    named = envs or {}
    plans = {
        sid: plan_for(registry, named.get(sid) or env_of(sid, suffix), timeout)
        for sid in space_ids
    }
    context = tls or httpx.create_ssl_context()
    headers = hub.auth_header()
    notify = on_update or (lambda space_id, status: None)

    def judged(result: VerifyResult) -> VerifyResult:
        notify(result.space_id, result.outcome.value)
        if stop_judged and (result := stop_after_verdict(hub, result)).stopped:
            notify(result.space_id, f"{result.outcome.value} (stopped)")
        return result

    def check(state: SpaceState) -> VerifyResult:
        plan = plans[state.space_id]
        result = check_space(state, plan, headers=headers, tls=context)
        if rehearsal is not None:
            result = rehearsed(result, plan.needs, rehearsal)
        return judged(result)

    futures: dict[str, Future[VerifyResult]] = {}
    states: Mapping[str, SpaceState] = {}
    with ThreadPoolExecutor(max_workers=probe_jobs(jobs, len(plans))) as pool:
        for poll in watch(hub, list(plans), wait=wait, interval=interval):
            states = poll.states
            for space_id, state in states.items():
                if space_id in futures:
                    continue
                if state.terminal:
                    notify(space_id, "probing" if state.ready else state.stage or "missing")
                    futures[space_id] = pool.submit(check, state)
                else:
                    notify(space_id, "queued" if state.queued else state.stage or "?")
        return [
            futures[sid].result()
            if sid in futures
            else judged(_still_waiting(plan, states[sid], wait))
            for sid, plan in plans.items()
        ]


def stop_after_verdict(hub: Hub, result: VerifyResult) -> VerifyResult:
    """Pause the Space ``result`` judges (``stopped`` set), unless the Hub reports it failed
    (nothing runs) or the pause fails (it keeps running; the verdict stands either way)."""
    if result.state.failed:
        return result
    try:
        hub.pause(result.space_id)
    except HubError:
        return result
    return dataclasses.replace(result, stopped=True)


def probe_jobs(jobs: int | None, spaces: int) -> int:
    """Probe threads: ``jobs``, else :data:`PROBE_JOBS`; never more than ``spaces``, at least 1."""
    return max(1, min(jobs or PROBE_JOBS, spaces))


def plan_for(registry: PluginRegistry, env: str, timeout: float) -> ProbePlan:
    """``env``'s plan: ``timeout``, or its plugin's longer one for a slow env, probes, needs."""
    profile = registry.profile(env)
    timeout = max(timeout, profile.probe_timeout or 0.0)
    probes = tuple(owned.record for owned in registry.probes(env))
    return ProbePlan(env, timeout, probes, profile.needs)


def rehearsed(result: VerifyResult, needs: Sequence[str], builder: str) -> VerifyResult:
    """``result`` as a rehearsal judges it: a FAIL of an env that ``needs`` what no rehearsal
    gives is INCONCLUSIVE naming those needs (never pinned), unless the Hub reports a
    BUILD_ERROR, which wins over any need; an INCONCLUSIVE of ours (a time-out) names them as
    a likely cause; anything else stands."""
    if not needs or result.state.stage == "BUILD_ERROR" or result.outcome is Outcome.PASS:
        return result
    if result.outcome is Outcome.INCONCLUSIVE:
        if not result.our_error or result.needs:
            return result
        also = f"; its plugin declares needs a rehearsal cannot give ({', '.join(needs)})"
        return dataclasses.replace(result, reason=result.reason + also)
    reason = (
        f"needs {', '.join(needs)}, which a rehearsal ({builder} builder) cannot give: verify "
        f"against the real Hub; the rehearsal saw {result.reason}"
    )
    return dataclasses.replace(
        result, outcome=Outcome.INCONCLUSIVE, reason=reason, needs=tuple(needs)
    )


def _still_waiting(plan: ProbePlan, state: SpaceState, wait: float) -> VerifyResult:
    reason = f"still {state.stage} after our wait of {wait:g} s; verify again with a longer --wait"
    if state.stale:
        reason = (
            f"{state.stage} is for commit {str(state.sha)[:12]}, not the deployed "
            f"{str(state.head)[:12]}, after a factory reboot and our wait of {wait:g} s: no "
            "evidence; verify again with a longer --wait, or run recover"
        )
    return VerifyResult(
        plan.env,
        state.space_id,
        state,
        Outcome.INCONCLUSIVE,
        reason,
        our_error=True,
        declared_needs=plan.needs,
    )


def _not_probed(state: SpaceState, plan: ProbePlan) -> VerifyResult:
    """The verdict on a Space the Hub reports failed or missing: FAIL only for the Space's own
    BUILD_ERROR/RUNTIME_ERROR; a missing, refused-config, paused or stopped one is not evidence."""
    last_line = state.error_tail(1) or "no errorMessage"
    host_made = uninstalled(state.builder, [state.error])
    if state.stage in SPACE_FAILURES and (host_made or state.builder_made):
        why = (
            HOST_INSTALLS_NOTHING
            if host_made
            else "the embedded Hub's builder could not build it, not the Space's own failure"
        )
        return VerifyResult(
            plan.env,
            state.space_id,
            state,
            Outcome.INCONCLUSIVE,
            f"{state.stage}: {last_line}; {why}",
            our_error=True,
        )
    lacked = needs_named(state.error or "", plan.needs) if state.stage == "RUNTIME_ERROR" else ()
    if lacked:  # the env stopped for a need its plugin declares (a build error always wins)
        reason = (
            f"needs {', '.join(lacked)} (give the Space what it needs, then verify again): "
            f"RUNTIME_ERROR: {last_line}"
        )
        return VerifyResult(
            plan.env, state.space_id, state, Outcome.INCONCLUSIVE, reason, needs=lacked
        )
    if state.stage in SPACE_FAILURES:
        return VerifyResult(
            plan.env, state.space_id, state, Outcome.FAIL, f"{state.stage}: {last_line}"
        )
    if state.stage is None:
        reason = f"{state.error}: deploy it, or check that HF_TOKEN can read it"
    elif state.stage in ("CONFIG_ERROR", "NO_APP_FILE"):
        reason = (
            f"{state.stage}: {last_line}; the Hub refused the staged tree's configuration: "
            "check the staged README and Dockerfile, then deploy again"
        )
    elif state.stage == "PAUSED":
        reason = (
            "PAUSED: the candidate is paused (cleanup --archive pauses verified candidates), "
            "so it cannot be probed; a verdict already recorded for it stands; restart it "
            "to verify again"
        )
    else:
        reason = f"{state.stage}: the Space does not run; restart it, then verify again"
    return VerifyResult(
        plan.env, state.space_id, state, Outcome.INCONCLUSIVE, reason, our_error=True
    )


def check_space(
    state: SpaceState, plan: ProbePlan, *, headers: Mapping[str, str], tls: ssl.SSLContext
) -> VerifyResult:
    """The verdict on one terminal Space (its failure, or the probes of its domains), with the
    needs its plugin declares."""
    return dataclasses.replace(_judged(state, plan, headers, tls), declared_needs=plan.needs)


def _judged(
    state: SpaceState, plan: ProbePlan, headers: Mapping[str, str], tls: ssl.SSLContext
) -> VerifyResult:
    if state.failed:
        return _not_probed(state, plan)
    domains = probe_targets(state.domains)
    if not domains:
        reason = f"{state.stage} but the runtime lists no domain"
        return VerifyResult(plan.env, state.space_id, state, Outcome.INCONCLUSIVE, reason)
    start = time.monotonic()
    attempts = tuple(
        _host_evidence(_health_evidence(_attempt(domain, plan, headers, tls), state), state)
        for domain in domains
    )
    outcome, reason, our_error = judge(attempts)
    seconds = time.monotonic() - start
    result = VerifyResult(
        plan.env, state.space_id, state, outcome, reason, attempts, seconds, our_error
    )
    decisive = result.decisive
    lacked = decisive.result.needs if decisive and outcome is Outcome.INCONCLUSIVE else ()
    return dataclasses.replace(result, needs=lacked)


def probe_targets(domains: Sequence[Domain]) -> tuple[Domain, ...]:
    """The READY domains, or every domain when none is READY."""
    return tuple(d for d in domains if d.stage == "READY") or tuple(domains)


def _attempt(
    domain: Domain, plan: ProbePlan, headers: Mapping[str, str], tls: ssl.SSLContext
) -> DomainAttempt:
    start = time.monotonic()
    result = probe_base_url(
        f"https://{domain.name}",
        timeout=plan.timeout,
        probes=plan.probes,
        needs=plan.needs,
        headers=headers,
        verify=tls,
    )
    return DomainAttempt(domain.name, domain.stage, result, time.monotonic() - start)


def _health_evidence(attempt: DomainAttempt, state: SpaceState) -> DomainAttempt:
    """A ``/health`` error counts against the Space only on a READY domain of a RUNNING one."""
    result = attempt.result
    if not result.health_only or (state.stage == "RUNNING" and attempt.stage == "READY"):
        return attempt
    where = f"the domain is {attempt.stage or 'not READY'}, the Space {state.stage}"
    reason = f"{result.reason}, but {where}; verify again once it is RUNNING and READY"
    weaker = dataclasses.replace(result, outcome=Outcome.INCONCLUSIVE, reason=reason)
    return dataclasses.replace(attempt, result=weaker)


def _host_evidence(attempt: DomainAttempt, state: SpaceState) -> DomainAttempt:
    """A probe FAIL whose answers name a missing module is no evidence under the ``host``
    builder (:func:`~releaselib.verify.outcome.uninstalled`): the server started, then an import
    inside ``/reset`` found nothing installed."""
    result = attempt.result
    texts = [result.reason, *(e.body for e in result.transcript)]
    if result.outcome is not Outcome.FAIL or not uninstalled(state.builder, texts):
        return attempt
    reason = f"{result.reason}; {HOST_INSTALLS_NOTHING}"
    weaker = dataclasses.replace(
        result, outcome=Outcome.INCONCLUSIVE, reason=reason, our_error=True
    )
    return dataclasses.replace(attempt, result=weaker)


def judge(attempts: Sequence[DomainAttempt]) -> tuple[Outcome, str, bool]:
    """PASS when any domain passed; else INCONCLUSIVE when any was (``our_error`` when the
    first such is ours); else FAIL. Returns (outcome, reason, our_error)."""
    passed = next((a for a in attempts if a.result.outcome is Outcome.PASS), None)
    if passed is not None:
        return Outcome.PASS, f"{passed.domain}: {passed.result.reason}", False
    unsure = next((a for a in attempts if a.result.outcome is Outcome.INCONCLUSIVE), None)
    reason = "; ".join(f"{a.domain}: {a.result.reason}" for a in attempts)
    if unsure is not None:
        return Outcome.INCONCLUSIVE, reason, unsure.result.our_error
    return Outcome.FAIL, reason, False


def record_result(ledger: Ledger, result: VerifyResult, **extra: Any) -> bool:
    """Record ``result`` as the env's verify step (its Verdict fields included); an
    INCONCLUSIVE one is recorded as failed, so a rerun verifies it again.

    An INCONCLUSIVE result is no evidence: it never replaces a standing PASS or FAIL for the same
    head (or for a Space it could not see), and goes to the history as a later attempt. Returns
    whether the result became the env's verdict."""
    data = {**result.as_json(), **extra}
    standing = ledger.env(result.env).get("verify")
    if result.outcome is Outcome.INCONCLUSIVE and standing is not None:
        decisive = standing.data.get("outcome") in (Outcome.PASS.value, Outcome.FAIL.value)
        if decisive and result.state.sha in (None, standing.data.get("commit")):
            ledger.attempt(result.env, "verify", status="failed", **data)
            return False
    ledger.record(result.env, "verify", status=result.ledger_status, **data)
    return True
