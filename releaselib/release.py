"""The whole release, resumable: stage, deploy, verify, promote, collection, pin, report.

Promote records each canonical's state before writing it, then every promoted canonical is
verified with the candidates' gate and rolled back when it FAILs
(:mod:`releaselib.publish.canonical_check`).

Every step reads the ledger and records what it did per env before the next env's result can be
lost. A rerun re-stages every env (so a lifted pin or a code fix shows up) and resumes: an env
whose staged content changed is redone from deploy on; every env whose verdict is not a PASS
standing for its candidate's current head is verified again (FAIL and INCONCLUSIVE included);
promote, collection and pin are redone after each new verdict, and promote and collection also
for envs they have not finished (so ``--create-missing`` on a rerun acts). Deploy and promote
diff against the Hub before committing, so a run killed between a commit and its record makes
no second commit when restarted.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from releaselib.config import RefResolution, ReleaseConfig
from releaselib.errors import UsageError
from releaselib.hub.client import Hub
from releaselib.hub.deploy import Progress, canonical_fence, deploy_one
from releaselib.ledger.ledger import EnvEntry, Ledger
from releaselib.ledger.paths import briefing_stem
from releaselib.ledger.report import current_report, write_briefing
from releaselib.ledger.step_records import record_deploy, record_stage, record_verdicts
from releaselib.plugins import PluginRegistry
from releaselib.publish.canonical_check import CheckOptions
from releaselib.publish.steps import canonical_step, collection_step, pin_step, promote_step
from releaselib.records import AllowedSecret, EnvSpec, StagedSpace
from releaselib.stage.stage_env import StageRun, stage_env
from releaselib.verify.candidates import verify_spaces
from releaselib.verify.verdicts import from_ledger

STEPS = ("stage", "deploy", "verify", "promote", "collection", "pin", "report")

Event = Callable[[str], None]


@dataclass(frozen=True)
class ReleaseOptions:
    """What a release run does beyond the release tuple."""

    from_step: str = "stage"
    until_step: str = "report"
    timeout: float = 20.0
    wait: float = 900.0
    interval: float = 2.0
    create_missing: bool = False
    commit_pins: bool = False
    tls: ssl.SSLContext | None = None
    allowed_secrets: tuple[AllowedSecret, ...] = ()
    #: The embedded Hub's builder when this release is a rehearsal (``rehearse``), else None:
    #: a rehearsal cannot give an env the secrets, hardware or services its plugin declares.
    rehearsal: str | None = None
    #: pin may write the checkout on the embedded Hub's verdicts (``--allow-embedded-hub``)
    allow_embedded_hub: bool = False
    #: lock each env's dependencies at staging (``--no-lock``: False)
    lock: bool = True
    #: pause each Space once its verdict is in, candidates and canonicals alike (a rehearsal
    #: only: the embedded Hub's next Space takes its slot; a real Hub keeps them running)
    stop_judged: bool = False

    def __post_init__(self) -> None:
        for flag, step in (("--from", self.from_step), ("--until", self.until_step)):
            if step not in STEPS:
                raise UsageError(
                    f"{flag} {step!r} is not a step", remedy=f"use one of {', '.join(STEPS)}"
                )
        if STEPS.index(self.from_step) > STEPS.index(self.until_step):
            raise UsageError(f"--from {self.from_step} comes after --until {self.until_step}")

    def runs(self, step: str) -> bool:
        return STEPS.index(self.from_step) <= STEPS.index(step) <= STEPS.index(self.until_step)

    def flags(self) -> list[str]:
        """The command-line flags that give these options (defaults left out)."""
        default = ReleaseOptions()
        out = []
        for name in ("timeout", "wait"):
            if getattr(self, name) != getattr(default, name):
                out += [f"--{name}", f"{getattr(self, name):g}"]
        return out + [
            f"--{name.replace('_', '-')}"
            for name in ("create_missing", "commit_pins", "allow_embedded_hub")
            if getattr(self, name)
        ]


@dataclass(frozen=True)
class ReleaseRun:
    """What ``run_release`` returns: the report (the briefing as data) and where it went."""

    report: dict[str, Any]
    briefing: Path | None


def nothing_to_redo(step: str) -> UsageError:
    """The refusal of ``--from STEP`` when the ledger (or no ledger) has no STEP records."""
    return UsageError(
        f"nothing to redo: the ledger has no {step} records",
        remedy=f"run release without --from, or with the ledger of a run that reached {step}",
    )


class Release:
    """One run over a set of envs, recording every step into ``ledger``."""

    def __init__(
        self,
        config: ReleaseConfig,
        resolution: RefResolution,
        hub: Hub,
        registry: PluginRegistry,
        ledger: Ledger,
        options: ReleaseOptions,
        on_event: Event = lambda line: None,
        on_progress: Progress | None = None,
    ) -> None:
        """``on_event`` hears one line per decision; ``on_progress(space_id, stage)`` hears each
        Space's uploads, runtime stages while waiting, probing and verdict (a live board)."""
        self.config, self.resolution, self.hub = config, resolution, hub
        self.registry, self.ledger, self.options = registry, ledger, options
        self.event = on_event
        self.progress = on_progress

    def run(self, specs: Sequence[EnvSpec]) -> ReleaseRun:
        envs = [s.name for s in specs]
        step = self.options.from_step
        if step != "stage":
            if not any(self.ledger.env(env).get(step) for env in envs):
                raise nothing_to_redo(step)
            for env in envs:
                self.ledger.invalidate_from(env, step)
        self.ledger.start_run(flags=self.options.flags(), envs=envs)
        staged = self.stage(specs)
        steps: list[tuple[str, Callable[[list[str]], None]]] = [
            ("deploy", lambda names: self.deploy([s for s in staged if s.env in names])),
            ("verify", self.verify),
            ("promote", self.promote),
            ("collection", self.collection),
            ("pin", self.pin),
        ]
        heard = self.event
        for step, action in steps:
            if not self.options.runs(step):
                continue
            self.event = headed(step, heard)
            action(envs)
        self.event = heard
        briefing = None
        report = current_report(
            self.hub, self.config, self.ledger, ref_reason=self.resolution.reason
        )
        if self.options.runs("report"):
            stem = briefing_stem(self.ledger.path)
            briefing, _ = write_briefing(report, self.ledger.path.parent, stem)
            self.event(f"briefing: {briefing}")
        return ReleaseRun(report, briefing)

    def stage(self, specs: Sequence[EnvSpec]) -> list[StagedSpace]:
        """Stage every env (cheap and deterministic); a changed env is redone from deploy."""
        staged = []
        run = StageRun(self.options.allowed_secrets, lock=self.options.lock)
        for spec in specs:
            result = stage_env(self.config, spec, self.registry, run)
            staged.append(result)
            if result.worktree:
                self.event(result.worktree)
            if record_stage(self.ledger, result):
                self.event(f"staged {spec.name}: {'ok' if result.ok else result.error}")
        return staged

    def pending(self, envs: Sequence[str], step: str, before: str) -> list[str]:
        """Envs whose ``before`` step is done and whose ``step`` is not, for the same content."""
        out = []
        for env in envs:
            entry = self.ledger.env(env)
            digest = entry.manifest_hash
            previous = entry.get(before)
            if (
                digest
                and previous is not None
                and previous.status == "done"
                and not self.ledger.done(env, step, digest)
            ):
                out.append(env)
        return out

    def unverified(self, envs: Sequence[str]) -> list[str]:
        """Deployed envs without a PASS standing for their candidate's current head (one
        listing of the namespace, when there are PASSes to check)."""
        entries = [self.ledger.env(env) for env in envs]
        deployed = {e.name: e for e in entries if (d := e.get("deploy")) and d.status == "done"}
        passes = {e: entry for e, entry in deployed.items() if _passed(entry)}
        heads: dict[str, str | None] = {}
        if passes:
            heads = {s.id: s.sha for s in self.hub.list_spaces(self.config.namespace)}
        return [
            env
            for env, entry in deployed.items()
            if env not in passes or _verified_head(entry) != heads.get(_space(entry))
        ]

    def after_verdict(self, envs: Sequence[str], step: str) -> list[str]:
        """Envs with a verdict whose ``step`` was not done after that verdict, or did not
        finish (held or failed)."""
        out = []
        for env in envs:
            entry = self.ledger.env(env)
            verify, record = entry.get("verify"), entry.get(step)
            if verify is None or verify.data.get("outcome") is None:
                continue
            stale = record is None or record.data.get("verified_at") != verify.at
            unfinished = record is not None and (
                record.status != "done" or record.data.get("decision") == "held"
            )
            if stale or unfinished:
                out.append(env)
        return out

    def deploy(self, staged: Sequence[StagedSpace]) -> None:
        todo = set(self.pending([s.env for s in staged], "deploy", "stage"))
        fence = canonical_fence(self.config, self.registry)
        self.hub.whoami()
        for s in staged:
            if s.env not in todo:
                continue
            d = deploy_one(
                self.hub, self.config, s, self.config.space_id(s.env), fence, self.progress
            )
            if self.progress is not None:
                self.progress(d.space_id, d.error or f"deployed {(d.commit or 'unchanged')[:12]}")
            record_deploy(self.ledger, d)
            self.event(f"deployed {s.env}: {d.error or (d.commit or 'unchanged')}")

    def verify(self, envs: list[str]) -> None:
        todo = self.unverified(envs)
        if not todo:
            return
        ids = [self.config.space_id(env) for env in todo]
        results = verify_spaces(
            self.hub,
            ids,
            suffix=self.config.suffix,
            registry=self.registry,
            timeout=self.options.timeout,
            wait=self.options.wait,
            interval=self.options.interval,
            tls=self.options.tls,
            on_update=self.progress or (lambda space_id, status: None),
            rehearsal=self.options.rehearsal,
            stop_judged=self.options.stop_judged,
        )
        for result, stands in record_verdicts(self.ledger, results):
            kept = "" if stands is None else "; the recorded verdict stands"
            self.event(f"verified {result.env}: {result.outcome.value} ({result.reason}){kept}")

    def promote(self, envs: list[str]) -> None:
        """Promote, then verify the canonicals promoted (rolling back those that FAIL)."""
        todo = self.after_verdict(envs, "promote")
        if todo:
            self.promote_envs(todo)
        checks = canonical_step(
            self.hub,
            self.config,
            self.ledger,
            self.registry,
            CheckOptions(
                self.options.timeout,
                self.options.wait,
                self.options.interval,
                self.options.tls,
                self.options.rehearsal,
                self.options.stop_judged,
            ),
            envs=envs,
            on_update=self.progress,
        )
        for check in checks:
            self.event(f"canonical {check.line()}")

    def promote_envs(self, todo: list[str]) -> None:
        promote_step(
            self.hub,
            self.config,
            self.ledger,
            self.registry,
            envs=todo,
            create_missing=self.options.create_missing,
        )
        for env in todo:
            record = self.ledger.env(env).get("promote")
            data = record.data if record is not None else {}
            promoted = data.get("decision") == "promoted"
            self.event(
                f"promote {env}: " + ("promoted" if promoted else f"held ({data.get('reason')})")
            )

    def collection(self, envs: list[str]) -> None:
        verdicts = from_ledger(self.ledger)
        passing = [e for e in envs if e in verdicts and verdicts[e].outcome == "PASS"]
        todo = self.after_verdict(passing, "collection")
        if not todo:
            return
        synced = collection_step(self.hub, self.config, self.ledger, self.registry, envs=todo)
        self.event(f"collection {synced[0].slug}: +{len(synced[0].added)}")

    def pin(self, envs: list[str]) -> None:
        todo = self.after_verdict(envs, "pin")
        if not todo:
            return
        embedded_ok = self.options.rehearsal is not None or self.options.allow_embedded_hub
        decisions, sha = pin_step(
            self.hub,
            self.config,
            self.ledger,
            envs=todo,
            commit=self.options.commit_pins,
            embedded_ok=embedded_ok,
        )
        for d in decisions:
            if d.changed or d.error:
                self.event(f"pin {d.env}: {d.error or d.as_json()['decision']}")
        if sha:
            self.event(f"pins committed: {sha}")


def _passed(entry: EnvEntry) -> bool:
    """True if the env's verdict is a PASS for its current staged content."""
    verify = entry.get("verify")
    return (
        verify is not None
        and verify.manifest_hash == entry.manifest_hash
        and verify.data.get("outcome") == "PASS"
    )


def _space(entry: EnvEntry) -> str:
    deploy = entry.get("deploy")
    return str(deploy.data.get("space_id")) if deploy is not None else ""


def _verified_head(entry: EnvEntry) -> object:
    verify = entry.get("verify")
    return verify.data.get("commit") if verify is not None else None


def headed(header: str, on_event: Event) -> Event:
    """``on_event`` that prints ``header`` before the first line it hears, and never when it
    hears none (a step with nothing to say prints no empty header)."""
    pending, lock = [header], threading.Lock()  # steps may report from several threads

    def hear(line: str) -> None:
        with lock:
            if pending:
                on_event(pending.pop())
        on_event(line)

    return hear
