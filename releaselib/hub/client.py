"""The one façade over ``huggingface_hub.HfApi``: nothing else in the tool talks to the Hub.

It reads the token once and never shows it; turns Hub errors into one-line ``HubError``s that
name the Space (:mod:`releaselib.hub.failures`); retries through :mod:`releaselib.hub.retry`;
and makes commits that are never duplicated (a failed commit is retried only after re-reading
what the Space holds).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from huggingface_hub import (
    Collection,
    CommitOperationAdd,
    CommitOperationDelete,
    HfApi,
    RepoFile,
    constants,
    get_token,
    set_client_factory,
    snapshot_download,
)
from huggingface_hub.errors import (
    LocalEntryNotFoundError,
    RepositoryNotFoundError,
)
from huggingface_hub.utils._http import hf_request_event_hook
from huggingface_hub.utils.tqdm import tqdm as hf_tqdm

from releaselib.errors import AuthError, HubError, UsageError
from releaselib.hub.failures import HUB_FAILURES, hub_call, hub_error, status_of
from releaselib.hub.retry import RETRY_STATUSES, RetryingTransport, RetryPolicy

KEEP_REMOTE = frozenset({".gitattributes"})
#: Printable ASCII without spaces: anything else in a token is a copy-paste accident.
TOKEN_SHAPE = re.compile(r"[!-~]+")


@dataclass(frozen=True)
class RemoteFile:
    """A file in a Space: its git blob id, and the sha256 of its content when stored in LFS."""

    blob_id: str
    lfs_sha256: str | None = None

    def same_as(self, local: Path, blob_sha1: str) -> bool:
        if self.lfs_sha256 is not None:
            return hashlib.sha256(local.read_bytes()).hexdigest() == self.lfs_sha256
        return self.blob_id == blob_sha1


@dataclass(frozen=True)
class RemoteSpace:
    """What the Hub says about one Space."""

    id: str
    private: bool | None
    sha: str | None
    runtime: Mapping[str, Any] = field(default_factory=dict)

    @property
    def stage(self) -> str | None:
        stage = self.runtime.get("stage")
        return str(stage) if stage is not None else None


class SilentProgress(hf_tqdm):
    """A progress bar that never shows: the tool reports progress itself."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "disable": True})  # type: ignore[no-untyped-call]


def install_retries(policy: RetryPolicy) -> None:
    """Make huggingface_hub's shared HTTP client retry through ``policy`` (with a timeout)."""
    set_client_factory(
        lambda: httpx2.Client(
            event_hooks={"request": [hf_request_event_hook]},
            follow_redirects=True,
            timeout=httpx2.Timeout(policy.read_timeout, connect=policy.connect_timeout),
            transport=RetryingTransport(policy),
        )
    )


class Hub:
    """A Hub endpoint and token. Build it with :meth:`connect`."""

    def __init__(self, api: HfApi, *, token: str | None, policy: RetryPolicy) -> None:
        self.api = api
        self._token = token
        self.policy = policy

    @classmethod
    def connect(
        cls,
        endpoint: str | None = None,
        *,
        token: str | None = None,
        policy: RetryPolicy | None = None,
    ) -> Hub:
        """Read the token once (``token``, else HF_TOKEN or the stored one) and install retries."""
        if constants.HF_HUB_OFFLINE:
            msg = "HF_HUB_OFFLINE is set: huggingface_hub reaches no Hub (the embedded one too)"
            raise UsageError(msg, remedy="unset HF_HUB_OFFLINE for this command")
        policy = policy or RetryPolicy()
        install_retries(policy)
        token = token or get_token()
        if token and not TOKEN_SHAPE.fullmatch(token):
            raise AuthError(
                "the Hub token (HF_TOKEN or the stored login) holds a space, a control "
                "character or a non-ASCII character, so no Hub would accept it",
                remedy="set it again, copied exactly from https://huggingface.co/settings/tokens",
            )
        endpoint = endpoint.rstrip("/") if endpoint else None  # as huggingface_hub does HF_ENDPOINT
        return cls(HfApi(endpoint=endpoint, token=token or False), token=token, policy=policy)

    @property
    def has_token(self) -> bool:
        return bool(self._token)

    def auth_header(self) -> dict[str, str]:
        """The header that private Space domains need; empty without a token."""
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    def whoami(self) -> str:
        return self.namespaces()[0]  # the token's user name

    def namespaces(self) -> list[str]:
        """The token's own namespaces: its user's name, then its orgs'. As :meth:`whoami`."""
        if not self._token:
            raise AuthError("no Hugging Face token", remedy="set HF_TOKEN or run `hf auth login`")
        with hub_call(f"token check at {self.api.endpoint}"):
            info = self.api.whoami()
        return [str(info["name"]), *(str(org["name"]) for org in info.get("orgs") or ())]

    def space(self, space_id: str) -> RemoteSpace | None:
        """The Space, or None when it does not exist (or is private and we can't see it)."""
        try:
            info = self.api.space_info(space_id)
        except RepositoryNotFoundError:
            return None
        except HUB_FAILURES as exc:
            raise hub_error(space_id, exc) from None
        runtime = info.runtime.raw if info.runtime is not None else {}
        return RemoteSpace(space_id, info.private, info.sha, runtime)

    def create_space(self, space_id: str, *, private: bool) -> None:
        with hub_call(space_id):
            self.api.create_repo(
                space_id, repo_type="space", space_sdk="docker", private=private, exist_ok=True
            )

    def set_private(self, space_id: str, private: bool) -> None:
        with hub_call(space_id):
            self.api.update_repo_settings(space_id, repo_type="space", private=private)

    def remote_files(self, space_id: str, revision: str | None = None) -> dict[str, RemoteFile]:
        """Every file in the Space's head revision (or at the commit ``revision``)."""
        with hub_call(space_id):
            entries = self.api.list_repo_tree(
                space_id, repo_type="space", recursive=True, revision=revision
            )
            return {
                e.path: RemoteFile(e.blob_id, e.lfs.sha256 if e.lfs else None)
                for e in entries
                if isinstance(e, RepoFile)
            }

    def download(
        self, space_id: str, revision: str, dest: Path, only: Sequence[str] | None = None
    ) -> Path:
        """Write the Space's files at ``revision`` (a commit sha; ``only`` these) into ``dest``,
        and nothing else: the download goes through a throw-away cache."""
        what = f"{space_id}@{revision[:12]}"
        with tempfile.TemporaryDirectory(prefix="openenv-release-download-") as cache:
            try:
                with hub_call(what):
                    snapshot = snapshot_download(
                        space_id,
                        repo_type="space",
                        revision=revision,
                        allow_patterns=list(only) if only else None,
                        cache_dir=cache,
                        endpoint=self.api.endpoint,
                        token=self._token or False,
                        tqdm_class=SilentProgress,
                    )
            except LocalEntryNotFoundError:  # what snapshot_download raises when the Hub is down
                raise HubError(
                    f"{what}: cannot download the Space's files", remedy="rerun; the step resumes"
                ) from None
            shutil.copytree(snapshot, dest, dirs_exist_ok=True)
        return dest

    def commit(
        self,
        space_id: str,
        tree: Path,
        *,
        upload: Sequence[str],
        delete: Sequence[str],
        message: str,
        manifest: Mapping[str, tuple[str, int]],
        description: str = "",
    ) -> str:
        """One commit that uploads ``upload`` from ``tree`` and deletes ``delete``; its sha.

        ``description`` is the commit's body. A failed attempt is retried only while the Space
        does not already hold ``manifest`` (the answer to an applied commit may be what was
        lost), so it never commits twice.
        """
        operations: list[CommitOperationAdd | CommitOperationDelete] = [
            *(CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(tree / p)) for p in upload),
            *(CommitOperationDelete(path_in_repo=p) for p in delete),
        ]
        for attempt in range(self.policy.attempts - 1):
            try:
                return self._create_commit(space_id, operations, message, description)
            except HUB_FAILURES as exc:
                if (
                    not isinstance(exc, httpx2.TransportError)
                    and status_of(exc) not in RETRY_STATUSES
                ):
                    raise hub_error(space_id, exc) from None
            self.policy.sleep(self.policy.delay(attempt))
            if self.holds(space_id, tree, manifest, delete):
                head = self.space(space_id)
                return str(head.sha) if head and head.sha else ""
        with hub_call(space_id):
            return self._create_commit(space_id, operations, message, description)

    def _create_commit(
        self,
        space_id: str,
        operations: list[CommitOperationAdd | CommitOperationDelete],
        message: str,
        description: str,
    ) -> str:
        info = self.api.create_commit(
            space_id,
            operations,
            commit_message=message,
            commit_description=description or None,
            repo_type="space",
        )
        return str(info.oid)

    def holds(
        self,
        space_id: str,
        tree: Path,
        manifest: Mapping[str, tuple[str, int]],
        deleted: Sequence[str] = (),
    ) -> bool:
        """True when the Space's files already equal ``manifest`` (``deleted`` gone)."""
        remote = self.remote_files(space_id)
        return not any(p in remote for p in deleted) and all(
            p in remote and remote[p].same_as(tree / p, sha) for p, (sha, _) in manifest.items()
        )

    def list_spaces(self, author: str, search: str | None = None) -> list[RemoteSpace]:
        """Every Space of ``author`` (matching ``search``) with its runtime: one listing,
        however many Spaces there are (pages follow the Link header)."""
        with hub_call(f"list Spaces of {author}"):
            return [
                RemoteSpace(s.id, s.private, s.sha, s.runtime.raw if s.runtime is not None else {})
                for s in self.api.list_spaces(
                    author=author, search=search, expand=["runtime", "private", "sha"]
                )
            ]

    def runtime(self, space_id: str) -> Mapping[str, Any]:
        with hub_call(space_id):
            return self.api.get_space_runtime(space_id).raw

    def restart(self, space_id: str, *, factory: bool = True) -> None:
        with hub_call(space_id):
            self.api.restart_space(space_id, factory_reboot=factory)

    def pause(self, space_id: str) -> None:
        with hub_call(space_id):
            self.api.pause_space(space_id)

    def delete_space(self, space_id: str) -> None:
        with hub_call(space_id):
            self.api.delete_repo(space_id, repo_type="space", missing_ok=True)

    def variables(self, space_id: str) -> dict[str, str]:
        with hub_call(space_id):
            return {k: v.value for k, v in self.api.get_space_variables(space_id).items()}

    def set_variable(self, space_id: str, key: str, value: str) -> None:
        with hub_call(space_id):
            self.api.add_space_variable(space_id, key, value)

    def delete_variable(self, space_id: str, key: str) -> None:
        with hub_call(space_id):
            self.api.delete_space_variable(space_id, key)

    def secret_names(self, space_id: str) -> tuple[str, ...] | None:
        """The names of the Space's secrets (never their values), or None when the Hub does
        not show them to this token."""
        try:
            return tuple(sorted(self.api.get_space_secrets(space_id)))
        except HUB_FAILURES:
            return None

    def collections(self, owner: str) -> list[Collection]:
        """The owner's collections (their items may be truncated: use :meth:`collection`)."""
        with hub_call(f"list collections of {owner}"):
            return list(self.api.list_collections(owner=owner))

    def collection(self, slug: str) -> Collection | None:
        """The collection, or None when the Hub answers 404 (none has that slug, or it is
        private and we can't see it)."""
        try:
            return self.api.get_collection(slug)
        except HUB_FAILURES as exc:
            if status_of(exc) == 404:
                return None
            raise hub_error(f"collection {slug}", exc) from None

    def create_collection(
        self, title: str, *, namespace: str, private: bool, description: str
    ) -> Collection:
        with hub_call(f"collection {title!r}"):
            return self.api.create_collection(
                title, namespace=namespace, private=private, description=description, exists_ok=True
            )

    def update_collection(self, slug: str, *, private: bool, description: str) -> None:
        with hub_call(f"collection {slug}"):
            self.api.update_collection_metadata(slug, private=private, description=description)

    def add_to_collection(self, slug: str, space_id: str, *, note: str | None = None) -> None:
        with hub_call(f"collection {slug}"):
            self.api.add_collection_item(slug, space_id, "space", note=note, exists_ok=True)

    def commit_count(self, space_id: str) -> int:
        return len(self.commit_titles(space_id))

    def commit_bodies(self, space_id: str) -> list[str]:
        """The descriptions of the commits on the Space's main branch, newest first."""
        with hub_call(space_id):
            commits = self.api.list_repo_commits(space_id, repo_type="space")
            return [c.message or "" for c in commits]

    def commit_titles(self, space_id: str) -> list[str]:
        """The titles of the commits on the Space's main branch, newest first."""
        with hub_call(space_id):
            return [c.title for c in self.api.list_repo_commits(space_id, repo_type="space")]
