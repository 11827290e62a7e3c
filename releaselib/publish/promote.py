"""Promote verified candidates into their canonical Spaces.

Canonical targets come from :mod:`canonical_targets` (two envs whose targets meet are both
held). All are looked up in one listing of the namespace; a target that does not exist is
created only with ``create_missing``. A target whose card names a newer release than this one
(its ``openenv-<V>`` tag) is held unless ``downgrade``.

Only a PASS recorded for the candidate's current head counts. The candidate's files at that
commit are downloaded, the README card is rebuilt for the target's Space id (the card this
release builds for the candidate must be what the candidate holds, so nothing but the Space
id changes), and the tree goes into the target through deploy's diff and the duplicate-free
commit: a target that already holds it gets no commit. Per-target variables are set only where
they differ. The target keeps its own visibility; one that ``create_missing`` creates is public.

A canonical is replaced only where the release owns it: the staged files, and the card
fields the release writes (merged into the canonical's own card, :mod:`canonical_card`). A
file the release never wrote (outside the staged tree's folders, such as
``assets/leaderboard.png``) is kept. A file inside them that the tree no longer has is deleted
only with ``delete`` (``--yes``); until then the plan names it and the target is held.

A dry run and a real run come from one computation, :func:`plan_promotions`: the run writes
exactly what the plan says (or fails), so ``--dry-run`` shows what the run will do. Before the
first write, the run hands every planned promotion, with the target's state as it is
(:class:`~releaselib.publish.canonical_state.SpaceState`: head commit, variables, hardware,
secret names), to ``before_write``, which records them so that a rollback can restore them.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from packaging.version import InvalidVersion, Version

from releaselib.config import ReleaseConfig
from releaselib.edit.readme import build_space_readme
from releaselib.env_facts import find_client_class, read_app_port
from releaselib.errors import AuthError, PromoteError, ReleaseError
from releaselib.hub.client import Hub, RemoteSpace
from releaselib.hub.deploy import diff
from releaselib.plugins import PluginRegistry
from releaselib.publish.canonical_card import held_release, merged_card
from releaselib.publish.canonical_state import SpaceState, read_state, token_shaped
from releaselib.publish.canonical_targets import Target, canonical_targets, shared_targets
from releaselib.publish.pin_files import tool_written_pins
from releaselib.records import StagedSpace, Verdict
from releaselib.stage.staged_tree import build_manifest
from releaselib.verify.verdicts import select, standing_pass

Status = Literal["promoted", "current", "planned", "held", "failed"]
#: what ``--create-missing`` makes of a missing canonical: the public face of the release, as
#: the canonicals a namespace already has are (only candidates are private)
CREATE = "create it as a public Docker Space"


@dataclass(frozen=True)
class Promotion:
    """The decision for one (candidate, canonical target) pair, and what was done about it.

    ``promoted``: the target now holds the candidate; ``current``: it already did; ``planned``:
    the run would change it (a dry run's answer); ``held``: the policy kept it untouched
    (``reason`` says why); ``failed``: publishing went wrong.
    """

    env: str
    candidate: str
    target: str
    status: Status
    reason: str = ""
    commit: str | None = None  # the candidate commit that was (or would be) published
    pushed: str | None = None  # the commit made in the target
    upload: tuple[str, ...] = ()
    delete: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()  # the canonical's own files, which the release never wrote
    variables: tuple[str, ...] = ()  # keys set (or to set)
    values: tuple[tuple[str, str], ...] = ()  # what they are set to (a plugin's, never a token)
    create: bool = False  # the target does not exist (created, or held for --create-missing)
    before: SpaceState | None = None  # the target before this write (planned, promoted, failed)

    @property
    def done(self) -> bool:
        """True when the target holds the candidate."""
        return self.status in ("promoted", "current")

    def as_json(self) -> dict[str, Any]:
        return {
            "env": self.env,
            "candidate": self.candidate,
            "target": self.target,
            "status": self.status,
            "reason": self.reason,
            "commit": self.commit,
            "pushed": self.pushed,
            "upload": list(self.upload),
            "delete": list(self.delete),
            "kept": list(self.kept),
            "variables": list(self.variables),
            "variable_values": {k: v for k, v in self.values if not token_shaped(v)},
            "create": self.create,
            "before": self.before.as_json() if self.before is not None else None,
        }


@dataclass(frozen=True)
class _Planned:
    """A promotion as planned, with what writing it needs: the target's tree (its card
    rebuilt) and the variables to set."""

    promotion: Promotion
    staged: StagedSpace | None = None
    wanted: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class _Run:
    """What every promotion of one run shares."""

    hub: Hub
    config: ReleaseConfig
    create_missing: bool
    delete: bool
    scratch: Path
    listing: Mapping[str, RemoteSpace]
    downgrade: bool = False


def promote(
    hub: Hub,
    config: ReleaseConfig,
    verdicts: Mapping[str, Verdict],
    registry: PluginRegistry,
    *,
    envs: list[str] | None = None,
    create_missing: bool = False,
    dry_run: bool = False,
    delete: bool = False,
    downgrade: bool = False,
    before_write: Callable[[Sequence[Promotion]], None] | None = None,
) -> list[Promotion]:
    """Promote every selected env whose candidate PASSed at its current head; one record per
    canonical target, in env order. A failing env never stops the others. ``delete``: remove
    the release's files a canonical holds and the tree no longer has (else it is held).
    ``downgrade``: replace a canonical whose card says it holds a newer release (else held).
    ``dry_run``: return the plan (status ``planned`` where the run would write). Otherwise
    ``before_write`` gets the planned promotions (each with its target's ``before`` state)
    before anything is written, then the plan is written."""
    listing = {s.id: s for s in hub.list_spaces(config.namespace)}
    with tempfile.TemporaryDirectory(prefix="openenv-release-promote-") as scratch:
        run = _Run(hub, config, create_missing, delete, Path(scratch), listing, downgrade)
        plans = plan_promotions(run, registry, verdicts, envs)
        if dry_run:
            return [p.promotion for p in plans]
        if before_write is not None:
            before_write([p.promotion for p in plans if p.promotion.status == "planned"])
        return [_write(run, p) for p in plans]


def plan_promotions(
    run: _Run, registry: PluginRegistry, verdicts: Mapping[str, Verdict], envs: list[str] | None
) -> list[_Planned]:
    """The one computation of what promote does, for a dry run and a real run alike."""
    chosen = select(verdicts, envs)
    shared = shared_targets(registry, dict.fromkeys([*verdicts, *chosen]), run.config.namespace)
    return [
        planned
        for env, verdict in chosen.items()
        for planned in _plan_env(run, registry, env, verdict, shared)
    ]


def _plan_env(
    run: _Run,
    registry: PluginRegistry,
    env: str,
    verdict: Verdict | None,
    shared: Mapping[str, tuple[str, ...]],
) -> list[_Planned]:
    candidate = verdict.space_id if verdict else run.config.space_id(env)
    targets = canonical_targets(registry, env, run.config.namespace, run.listing)

    def each(status: Status, reason: str) -> list[_Planned]:
        return [_Planned(Promotion(env, candidate, t.space_id, status, reason)) for t in targets]

    clash = [(t.space_id, shared[t.space_id]) for t in targets if t.space_id in shared]
    if clash:
        target, owners = clash[0]
        return each(
            "held",
            f"{target} is the canonical target of {' and '.join(owners)}: rename one env "
            "folder or change its plugin's canonical targets",
        )
    try:
        _, reason = standing_pass(run.hub, verdict)
        if reason is not None or verdict is None or verdict.commit is None:
            return each("held", reason or "")
        if candidate in {t.space_id for t in targets}:
            return each("held", f"the candidate {candidate} is itself a canonical Space")
        tree = run.hub.download(candidate, verdict.commit, run.scratch / env / "candidate")
        check_card(run.config, env, tree, candidate)
        if tool_written_pins(tree, env):
            raise PromoteError(
                f"{candidate}: {'; '.join(tool_written_pins(tree, env))} is a pin openenv-release "
                "wrote for a failed release, so the tree does not run this release",
                remedy="stage and deploy the env again (staging pins it to the release's ref)",
            )
    except AuthError:
        raise
    except ReleaseError as exc:
        return each("failed", exc.one_line())
    return [_plan(run, env, candidate, verdict.commit, tree, t) for t in targets]


def space_card(config: ReleaseConfig, env: str, tree: Path, space_id: str) -> str:
    """The README card this release builds for ``env`` in ``space_id``, from the env's own
    README in the staged ``tree`` (``envs/<env>/README.md``)."""
    env_dir = tree / "envs" / env
    source_path = env_dir / "README.md"
    source = source_path.read_bytes().decode("utf-8") if source_path.is_file() else None
    text, _ = build_space_readme(
        source,
        path="README.md",
        env=env,
        space_id=space_id,
        version=config.version,
        ref=config.pin_label,
        hub_tag=config.hub_tag,
        app_port=read_app_port(env_dir),
        client_class=find_client_class(env_dir),
    )
    return text


def check_card(config: ReleaseConfig, env: str, tree: Path, candidate: str) -> None:
    """PromoteError unless the candidate's README is the card this release builds for it, so
    rebuilding it for a target changes nothing but the Space id."""
    readme = tree / "README.md"
    held = readme.read_bytes().decode("utf-8", "replace") if readme.is_file() else None
    if held != space_card(config, env, tree, candidate):
        raise PromoteError(
            f"{candidate}: README.md is not the card release {config.version} (ref "
            f"{config.pin_label}, tag {config.hub_tag}) builds for it, so it cannot be rebuilt for "
            "the canonical Space",
            remedy="redeploy the candidate with this release tuple and verify it again",
        )


def _plan(run: _Run, env: str, candidate: str, commit: str, tree: Path, target: Target) -> _Planned:
    """What making ``target`` hold the candidate's tree (card rebuilt) and its variables
    takes: ``current`` (nothing), ``planned`` (with the target's state now), or ``held``."""
    base = Promotion(env, candidate, target.space_id, "held", commit=commit)
    if not target.exists and not run.create_missing:
        reason = f"{target.space_id} does not exist; pass --create-missing to {CREATE}"
        return _Planned(replace(base, reason=reason, create=True))  # held: it is missing
    try:
        remote = run.hub.remote_files(target.space_id) if target.exists else {}
        card = _held_card(run, target, remote)
        newer = _newer_release(run, card)
        if newer:
            return _Planned(replace(base, reason=newer))
        staged = _target_tree(run, env, tree, target.space_id, card)
        add, change, gone = diff(staged, remote)
        owned = {path.split("/")[0] for path in staged.manifest if "/" in path}
        delete = tuple(p for p in gone if p.split("/")[0] in owned)
        held = run.hub.variables(target.space_id) if target.exists else {}
        wanted = {k: v for k, v in target.variables if held.get(k) != v}
        plan = replace(
            base,
            upload=add + change,
            delete=delete,
            kept=tuple(p for p in gone if p not in delete),
            variables=tuple(wanted),
            values=tuple(wanted.items()),
            create=not target.exists,
        )
        if not (plan.upload or plan.delete or plan.variables or plan.create):
            return _Planned(replace(plan, status="current"))
        if plan.delete and not run.delete:
            reason = (
                f"would delete {len(delete)} file(s) of an earlier release the tree no longer "
                f"has ({', '.join(delete[:3])}{', ...' if len(delete) > 3 else ''}): "
                "pass --yes to delete them"
            )
            return _Planned(replace(plan, status="held", reason=reason))
        before = (
            read_state(run.hub, target.space_id, run.listing.get(target.space_id), held)
            if target.exists
            else SpaceState(target.space_id, None)
        )
    except AuthError:
        raise
    except ReleaseError as exc:
        return _Planned(replace(base, status="failed", reason=exc.one_line()))
    missing = f"{target.space_id} does not exist: {CREATE}" if plan.create else ""
    planned = replace(plan, status="planned", before=before, reason=missing)
    return _Planned(planned, staged, tuple(wanted.items()))


def _write(run: _Run, planned: _Planned) -> Promotion:
    """Write a ``planned`` promotion (any other is returned as it is)."""
    plan, staged = planned.promotion, planned.staged
    if plan.status != "planned" or staged is None or plan.commit is None:
        return plan
    try:
        if plan.create:
            run.hub.create_space(plan.target, private=False)  # a canonical is public
        for key, value in planned.wanted:  # before the commit, so its build sees them
            run.hub.set_variable(plan.target, key, value)
        pushed = None
        if plan.upload or plan.delete:
            pushed = run.hub.commit(
                plan.target,
                staged.staged_dir,
                upload=plan.upload,
                delete=plan.delete,
                message=_message(run.config, plan.env, plan.candidate, plan.commit),
                manifest=staged.manifest,
            )
    except AuthError:
        raise
    except ReleaseError as exc:
        return replace(plan, status="failed", reason=exc.one_line())
    made = f"created {plan.target} as a public Docker Space" if plan.create else ""
    return replace(plan, status="promoted", pushed=pushed, reason=made)


def _newer_release(run: _Run, card: str | None) -> str:
    """Why a canonical whose card names a newer release than this one is held ("" when it
    names none, or ``downgrade`` allows it)."""
    held = held_release(card)
    if held is None or run.downgrade:
        return ""
    try:
        ours = Version(run.config.version)
    except InvalidVersion:
        return ""  # the release tuple refuses such a version before promote
    if held <= ours:
        return ""
    return (
        f"holds release {held}, newer than {run.config.version}: pass --allow-downgrade to "
        "replace it with this older release"
    )


def _held_card(run: _Run, target: Target, remote: Mapping[str, object]) -> str | None:
    """The target's README as it is now (None when it has none)."""
    if "README.md" not in remote:
        return None
    dest = run.scratch / "held" / target.space_id.replace("/", "__")
    run.hub.download(target.space_id, "main", dest, only=["README.md"])
    return (dest / "README.md").read_bytes().decode("utf-8", "replace")


def _target_tree(run: _Run, env: str, tree: Path, space_id: str, held: str | None) -> StagedSpace:
    """A copy of the candidate's tree with the card rebuilt for ``space_id`` and merged into
    the target's own card ``held``, and its manifest."""
    dest = run.scratch / env / space_id.replace("/", "__")
    shutil.copytree(tree, dest)
    card = merged_card(space_card(run.config, env, tree, space_id), held)
    (dest / "README.md").write_bytes(card.encode("utf-8"))
    return StagedSpace(env, space_id, dest, ok=True, manifest=build_manifest(dest))


def _message(config: ReleaseConfig, env: str, candidate: str, commit: str) -> str:
    return (
        f"Promote {env} {config.version} from {candidate}@{commit[:12]} "
        f"(OpenEnv {config.pin_label})"
    )
