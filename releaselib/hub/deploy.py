"""Deploy staged trees as private, version-suffixed candidate Spaces, sending only what changed.

For each env: ensure the docker Space, diff the staged manifest against the Space's files by
git blob id, and make one commit with the changed files and the deletions of files the staged
tree no longer has (``.gitattributes`` kept). An unchanged tree makes no commit. Envs deploy in
parallel; one failing env never stops the others.

Fences, by construction: every target is a ``CandidateId`` (a non-empty suffix, or a
``--repo-id`` checked against the canonicals), and every target is checked against the
release's ``Canonicals`` before anything is written, so deploy never writes a canonical Space.
Visibility is set only when deploy creates the Space (private unless the release is public);
an existing Space keeps its visibility, and a difference is reported, never changed.

Ownership: an existing Space at a candidate id is written only when it is private and a
release of this tool made it, by the one rule of :mod:`releaselib.hub.ownership` (every commit
deploy makes carries its marker); any other is refused for that env, naming the Space, and
nothing is written there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from releaselib import __version__
from releaselib.config import ReleaseConfig
from releaselib.errors import AuthError, ReleaseError, UnreachableError, UsageError
from releaselib.hub.client import KEEP_REMOTE, Hub, RemoteFile, RemoteSpace
from releaselib.hub.ownership import FOREIGN_REMEDY, foreign, ownership_mark
from releaselib.plugins import PluginRegistry
from releaselib.records import StagedSpace
from releaselib.space_ids import CandidateId, Canonicals, refuse_token
from releaselib.stage.discover import discover_envs
from releaselib.text_encoding import utf8_text

#: ``(space_id, what is happening)``: deploy's progress, for a live display or a log line
Progress = Callable[[str, str], None]


@dataclass(frozen=True)
class DeployPlan:
    """What a deploy would do to one Space."""

    space_id: str
    exists: bool | None  # None: could not see (private Space, no token)
    add: tuple[str, ...] = ()
    change: tuple[str, ...] = ()
    delete: tuple[str, ...] = ()
    visibility: str | None = None  # e.g. "public (kept)": differs from the release's
    note: str | None = None
    refused: bool = False  # it holds a Space that deploy refuses to write (``note`` says why)

    @property
    def upload(self) -> tuple[str, ...]:
        return self.add + self.change

    def as_json(self) -> dict[str, Any]:
        return {
            "space_id": self.space_id,
            "action": "refused"
            if self.refused
            else "unknown"
            if self.exists is None
            else "exists"
            if self.exists
            else "create",
            "add": list(self.add),
            "change": list(self.change),
            "delete": list(self.delete),
            "visibility": self.visibility,
            "note": self.note,
        }


@dataclass(frozen=True)
class Deployed:
    """The result of deploying one env."""

    staged: StagedSpace
    space_id: str
    created: bool = False
    commit: str | None = None  # the commit this deploy made; None when unchanged
    head: str | None = None  # the Space's head sha afterwards (what verify checks)
    unchanged: bool = False
    files_sent: int = 0
    bytes_sent: int = 0
    note: str | None = None  # e.g. an existing Space's visibility, kept as it is
    error: str | None = None
    plan: DeployPlan | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def as_json(self) -> dict[str, Any]:
        data = self.staged.as_json()
        data.update(
            space_id=self.space_id,
            ok=self.ok,
            created=self.created,
            commit=self.commit,
            head=self.head,
            unchanged=self.unchanged,
            files_sent=self.files_sent,
            bytes_sent=self.bytes_sent,
            note=self.note,
            error=self.error,
        )
        if self.plan is not None:
            data["plan"] = self.plan.as_json()
        return data


def canonical_fence(config: ReleaseConfig, registry: PluginRegistry) -> Canonicals:
    """The release's canonical Spaces: ``<namespace>/<env>`` of every env in the checkout (and
    every env a plugin profiles) and every canonical target a plugin declares."""
    profiles = registry.profiles()
    targets = (t.repo for owned in profiles.values() for t in owned.record.targets)
    envs = [*(s.name for s in discover_envs(config.repo)), *profiles]
    return Canonicals.of(envs, targets)


def check_repo_id(repo_id: str, envs: Sequence[str], fence: Canonicals) -> CandidateId:
    """``--repo-id`` is allowed with exactly one env, must be owner/name and never a
    canonical Space."""
    refuse_token("--repo-id", repo_id)
    if len(envs) != 1:
        raise UsageError(
            f"--repo-id {repo_id} needs exactly one --env (got {len(envs)})",
            remedy="pass one --env with --repo-id",
        )
    return CandidateId.given(repo_id, fence)


def targets(
    config: ReleaseConfig,
    staged: Iterable[StagedSpace],
    fence: Canonicals,
    repo_id: CandidateId | None = None,
) -> list[CandidateId]:
    """Each staged env's candidate (or ``repo_id``); UsageError, before anything is written,
    when any of them is a canonical Space."""
    ids = [repo_id or config.space_id(s.env) for s in staged]
    for space_id in ids:
        fence.refuse(space_id)
    return ids


def diff(
    staged: StagedSpace, remote: dict[str, RemoteFile]
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """Paths to add, change and delete so the Space holds exactly the staged manifest."""
    add = tuple(p for p in staged.manifest if p not in remote)
    change = tuple(
        p
        for p, (sha, _) in staged.manifest.items()
        if p in remote and not remote[p].same_as(staged.staged_dir / p, sha)
    )
    delete = tuple(sorted(p for p in remote if p not in staged.manifest and p not in KEEP_REMOTE))
    return add, change, delete


def kept_visibility(space: RemoteSpace, private: bool) -> str | None:
    """A note when an existing Space's visibility differs from the release's: deploy sets
    visibility only on a Space it creates, and never changes one it did not create."""
    if space.private is None or space.private == private:
        return None
    held = "private" if space.private else "public"
    return (
        f"{held}, and stays {held}: deploy sets visibility only on Spaces it creates; "
        "change it on the Hub if you mean to"
    )


def plan(hub: Hub, staged: StagedSpace, space_id: CandidateId, *, private: bool) -> DeployPlan:
    """What deploying ``staged`` to ``space_id`` would do, read from the Hub without writing."""
    space = hub.space(space_id)
    if space is None:
        note = None if hub.has_token else "no token: a private Space would look missing"
        return DeployPlan(
            space_id, exists=False if hub.has_token else None, add=tuple(staged.manifest), note=note
        )
    remote = hub.remote_files(space_id)
    refused = foreign(hub, space, remote)
    if refused is not None:
        return DeployPlan(
            space_id, True, note=f"refused: {refused}; {FOREIGN_REMEDY}", refused=True
        )
    add, change, delete = diff(staged, remote)
    kept = kept_visibility(space, private)
    visibility = f"{'private' if space.private else 'public'} (kept)" if kept else None
    return DeployPlan(space_id, True, add, change, delete, visibility, kept)


def commit_message(config: ReleaseConfig, env: str) -> str:
    return (
        f"Release {env} {config.version} (OpenEnv {config.pin_label}) "
        f"with openenv-release {__version__}"
    )


def deploy_one(
    hub: Hub,
    config: ReleaseConfig,
    staged: StagedSpace,
    space_id: CandidateId,
    fence: Canonicals,
    on_progress: Progress | None = None,
) -> Deployed:
    """Deploy one staged env; a Hub failure is returned in the record, never raised. A
    canonical ``space_id`` is a UsageError, raised before anything is written.
    ``on_progress(space_id, what)`` hears of the upload before it starts."""
    fence.refuse(space_id)
    if not staged.ok:
        return Deployed(staged, space_id, error=staged.error or f"{staged.env}: staging failed")
    try:
        space = hub.space(space_id)
        created = space is None
        if created:
            hub.create_space(space_id, private=config.private)
            space = hub.space(space_id)
        remote = hub.remote_files(space_id)
        refused = None if created or space is None else foreign(hub, space, remote)
        if refused is not None:
            return Deployed(staged, space_id, error=f"{staged.env}: {refused}; {FOREIGN_REMEDY}")
        note = kept_visibility(space, config.private) if space is not None else None
        add, change, delete = diff(staged, remote)
        upload = add + change
        if not upload and not delete:
            return Deployed(
                staged,
                space_id,
                created=created,
                head=space.sha if space is not None else None,
                unchanged=True,
                note=note,
            )
        if ".gitignore" in upload:  # the Hub client reads it as UTF-8 to send it along
            utf8_text(staged.staged_dir / ".gitignore", f"envs/{staged.env}/.gitignore")
        if on_progress is not None:
            sent = sum(staged.manifest[p][1] for p in upload)
            on_progress(space_id, f"uploading {len(upload)} files, {sent:,} bytes")
        sha = hub.commit(
            space_id,
            staged.staged_dir,
            upload=upload,
            delete=delete,
            message=commit_message(config, staged.env),
            manifest=staged.manifest,
            description=ownership_mark(space_id),
        )
    except AuthError:
        raise
    except ReleaseError as exc:
        return Deployed(staged, space_id, error=f"{staged.env}: {exc.one_line()}")
    return Deployed(
        staged,
        space_id,
        created=created,
        commit=sha,
        head=sha,
        files_sent=len(upload),
        bytes_sent=sum(staged.manifest[p][1] for p in upload),
        note=note,
    )


def deploy_all(
    hub: Hub,
    config: ReleaseConfig,
    staged: Sequence[StagedSpace],
    *,
    fence: Canonicals,
    repo_id: CandidateId | None = None,
    on_done: Callable[[Deployed], None] | None = None,
    on_progress: Progress | None = None,
) -> list[Deployed]:
    """Deploy every staged env with ``config.jobs`` in parallel, in input order."""
    ids = targets(config, staged, fence, repo_id)
    hub.whoami()  # a missing or rejected token is one clear error before any upload

    def one(s: StagedSpace, space_id: CandidateId) -> Deployed:
        result = deploy_one(hub, config, s, space_id, fence, on_progress)
        if on_done is not None:
            on_done(result)
        return result

    with ThreadPoolExecutor(max_workers=config.jobs) as pool:
        return list(pool.map(one, staged, ids))


def plan_all(
    hub: Hub,
    config: ReleaseConfig,
    staged: Sequence[StagedSpace],
    *,
    fence: Canonicals,
    repo_id: CandidateId | None = None,
) -> list[Deployed]:
    """Dry run: the plan per Space, read-only; works without a token for public Spaces. A
    canonical target is refused as it would be by ``deploy_all``."""
    ids = targets(config, staged, fence, repo_id)

    def one(s: StagedSpace, space_id: CandidateId) -> Deployed:
        if not s.ok:
            return Deployed(s, space_id, error=s.error)
        try:
            planned = plan(hub, s, space_id, private=config.private)
            if planned.refused:  # as deploy_one refuses it: the env fails
                return Deployed(s, space_id, error=f"{s.env}: {planned.note}", plan=planned)
            return Deployed(s, space_id, plan=planned)
        except UnreachableError:
            raise  # the step fails as a whole, with one error naming the endpoint
        except ReleaseError as exc:
            return Deployed(s, space_id, error=f"{s.env}: {exc.one_line()}")

    with ThreadPoolExecutor(max_workers=config.jobs) as pool:
        return list(pool.map(one, staged, ids))
