"""What every Hub API route shares: the context, errors the client maps, auth and pagination."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse

from releaselib.localhub.requestlog import RequestLog
from releaselib.localhub.spaces import SpaceRuntimes
from releaselib.localhub.store import HubStore, Repo

_Item = TypeVar("_Item")


@dataclass(frozen=True)
class HubContext:
    """Shared by all routes through ``app.state.hub``."""

    store: HubStore
    runtimes: SpaceRuntimes
    log: RequestLog
    page_size: int


class HubHTTPError(Exception):
    """Becomes an error response with the headers huggingface_hub maps to its exceptions."""

    def __init__(self, status: int, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code

    def response(self) -> JSONResponse:
        headers = {"X-Error-Message": self.message}
        if self.code:
            headers["X-Error-Code"] = self.code
        return JSONResponse({"error": self.message}, self.status, headers)


def context(request: Request) -> HubContext:
    hub: HubContext = request.app.state.hub
    return hub


def base_url(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def is_authenticated(request: Request) -> bool:
    """False without a token; a wrong token is a 401, as on the Hub."""
    header = request.headers.get("authorization")
    if not header:
        return False
    if header != f"Bearer {context(request).store.token}":
        raise HubHTTPError(401, "Invalid credentials in Authorization header")
    return True


def require_token(request: Request) -> None:
    if not is_authenticated(request):
        raise HubHTTPError(401, "You must be authenticated to do this (pass a token)")


def repo_type_of(request: Request) -> str:
    """``spaces``, ``models`` or ``datasets``, from ``/api/<type>/...`` or a file URL
    (``/spaces/<id>/resolve/...``; a model's has no type prefix)."""
    parts = request.url.path.split("/")
    if parts[1] == "api":
        return parts[2]
    return parts[1] if parts[1] in ("spaces", "datasets") else "models"


def readable_repo(request: Request) -> Repo:
    """The repo named by the path; 404 RepoNotFound if missing or private and not authenticated."""
    params = request.path_params
    repo_id = f"{params['namespace']}/{params['name']}"
    repo = context(request).store.repo(repo_type_of(request), repo_id)
    if repo is None or (repo.private and not is_authenticated(request)):
        raise HubHTTPError(404, f"Repository {repo_id} not found", code="RepoNotFound")
    return repo


def writable_repo(request: Request) -> Repo:
    require_token(request)
    return readable_repo(request)


def check_revision(repo: Repo, revision: str) -> None:
    """Only ``main`` (or the head sha) exists for writes."""
    if revision != "main" and (repo.head is None or revision != repo.head.oid):
        raise HubHTTPError(404, f"Revision {revision} not found", code="RevisionNotFound")


def files_at(repo: Repo, revision: str) -> tuple[str | None, dict[str, str]]:
    """The commit sha and files (path -> blob oid) at ``revision`` for reads: ``main`` or any
    commit's full sha, as the Hub serves ``/tree/<sha>`` and ``/resolve/<sha>``."""
    if revision == "main":
        return (repo.head.oid if repo.head else None), repo.files()
    commit = next((c for c in repo.commits if c.oid == revision), None)
    if commit is None:
        raise HubHTTPError(404, f"Revision {revision} not found", code="RevisionNotFound")
    return commit.oid, dict(commit.files)


def repo_url(base: str, repo_type: str, repo_id: str) -> str:
    prefix = "" if repo_type == "models" else f"/{repo_type}"
    return f"{base}{prefix}/{repo_id}"


def object_id(text: str) -> str:
    """A stable 24-hex id, like the Hub's ``_id``."""
    return hashlib.sha1(text.encode()).hexdigest()[:24]


async def json_body(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError as exc:
        raise HubHTTPError(400, f"request body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise HubHTTPError(400, "request body must be a JSON object")
    return body


def paginated(request: Request, items: Sequence[_Item]) -> tuple[list[_Item], dict[str, str]]:
    """One page of ``items`` and, if more remain, a ``Link: <next>; rel="next"`` header."""
    size = context(request).page_size
    if limit := request.query_params.get("limit"):
        size = min(size, int(limit))
    start = int(request.query_params.get("cursor", 0))
    page = list(items[start : start + size])
    if start + size >= len(items):
        return page, {}
    next_url = request.url.include_query_params(cursor=start + size)
    return page, {"Link": f'<{next_url}>; rel="next"'}
