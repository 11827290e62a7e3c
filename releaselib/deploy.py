"""Deploy staged trees as private, version-suffixed candidate Spaces, sending only what changed.

For each env: ensure the docker Space (creating it private unless the release is public, and
enforcing that visibility on a Space that already existed), diff the staged manifest against
the Space's files by git blob id, and make one commit with the changed files and the deletions
of files the staged tree no longer has (``.gitattributes`` kept). An unchanged tree makes no
commit. Envs deploy in parallel; one failing env never stops the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from releaselib import __version__
from releaselib.config import ReleaseConfig
from releaselib.errors import AuthError, ReleaseError, UnreachableError, UsageError
from releaselib.hub import KEEP_REMOTE, Hub, RemoteFile, RemoteSpace
from releaselib.records import SPACE_ID, StagedSpace

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
    visibility: str | None = None  # e.g. "public -> private"
    note: str | None = None

    @property
    def upload(self) -> tuple[str, ...]:
        return self.add + self.change

    def as_json(self) -> dict[str, Any]:
        return {
            "space_id": self.space_id,
            "action": "unknown" if self.exists is None else "exists" if self.exists else "create",
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
    visibility_changed: bool = False
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
            visibility_changed=self.visibility_changed,
            error=self.error,
        )
        if self.plan is not None:
            data["plan"] = self.plan.as_json()
        return data


def check_repo_id(repo_id: str, envs: Sequence[str]) -> str:
    """``--repo-id`` is allowed with exactly one env and must be owner/name."""
    if len(envs) != 1:
        raise UsageError(
            f"--repo-id {repo_id} needs exactly one --env (got {len(envs)})",
            remedy="pass one --env with --repo-id",
        )
    if not SPACE_ID.match(repo_id):
        raise UsageError(
            f"--repo-id {repo_id!r} is not owner/name",
            remedy="e.g. --repo-id openenv/echo_env-0.2.2",
        )
    return repo_id


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


def visibility_change(space: RemoteSpace, private: bool) -> str | None:
    if space.private is None or space.private == private:
        return None
    return f"{'private' if space.private else 'public'} -> {'private' if private else 'public'}"


def plan(hub: Hub, staged: StagedSpace, space_id: str, *, private: bool) -> DeployPlan:
    """What deploying ``staged`` to ``space_id`` would do, read from the Hub without writing."""
    space = hub.space(space_id)
    if space is None:
        note = None if hub.has_token else "no token: a private Space would look missing"
        return DeployPlan(
            space_id, exists=False if hub.has_token else None, add=tuple(staged.manifest), note=note
        )
    add, change, delete = diff(staged, hub.remote_files(space_id))
    return DeployPlan(space_id, True, add, change, delete, visibility_change(space, private))


def commit_message(config: ReleaseConfig, env: str) -> str:
    return (
        f"Release {env} {config.version} (OpenEnv ref {config.ref}) "
        f"with openenv-release {__version__}"
    )


def deploy_one(
    hub: Hub,
    config: ReleaseConfig,
    staged: StagedSpace,
    space_id: str,
    on_progress: Progress | None = None,
) -> Deployed:
    """Deploy one staged env; a Hub failure is returned in the record, never raised.
    ``on_progress(space_id, what)`` hears of the upload before it starts."""
    if not staged.ok:
        return Deployed(staged, space_id, error=staged.error or f"{staged.env}: staging failed")
    try:
        space = hub.space(space_id)
        created = space is None
        if created:
            hub.create_space(space_id, private=config.private)
            space = hub.space(space_id)
        changed_visibility = (
            space is not None and visibility_change(space, config.private) is not None
        )
        if changed_visibility:
            hub.set_private(space_id, config.private)
        add, change, delete = diff(staged, hub.remote_files(space_id))
        upload = add + change
        if not upload and not delete:
            return Deployed(
                staged,
                space_id,
                created=created,
                head=space.sha if space is not None else None,
                unchanged=True,
                visibility_changed=changed_visibility,
            )
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
        visibility_changed=changed_visibility,
    )


def deploy_all(
    hub: Hub,
    config: ReleaseConfig,
    staged: Sequence[StagedSpace],
    *,
    repo_id: str | None = None,
    on_done: Callable[[Deployed], None] | None = None,
    on_progress: Progress | None = None,
) -> list[Deployed]:
    """Deploy every staged env with ``config.jobs`` in parallel, in input order."""
    hub.whoami()  # a missing or rejected token is one clear error before any upload

    def one(s: StagedSpace) -> Deployed:
        result = deploy_one(hub, config, s, repo_id or s.space_id, on_progress)
        if on_done is not None:
            on_done(result)
        return result

    with ThreadPoolExecutor(max_workers=config.jobs) as pool:
        return list(pool.map(one, staged))


def plan_all(
    hub: Hub, config: ReleaseConfig, staged: Sequence[StagedSpace], *, repo_id: str | None = None
) -> list[Deployed]:
    """Dry run: the plan per Space, read-only; works without a token for public Spaces."""

    def one(s: StagedSpace) -> Deployed:
        space_id = repo_id or s.space_id
        if not s.ok:
            return Deployed(s, space_id, error=s.error)
        try:
            return Deployed(s, space_id, plan=plan(hub, s, space_id, private=config.private))
        except UnreachableError:
            raise  # the step fails as a whole, with one error naming the endpoint
        except ReleaseError as exc:
            return Deployed(s, space_id, error=f"{s.env}: {exc.one_line()}")

    with ThreadPoolExecutor(max_workers=config.jobs) as pool:
        return list(pool.map(one, staged))
