"""Hub API routes for accounts, repos, commits and file trees."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any

import yaml
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from releaselib.localhub.apicommon import (
    HubHTTPError,
    base_url,
    check_revision,
    context,
    files_at,
    is_authenticated,
    json_body,
    object_id,
    paginated,
    readable_repo,
    repo_type_of,
    repo_url,
    require_token,
    writable_repo,
)
from releaselib.localhub.store import REPO_TYPES, HubStore, Repo, git_tree_oids, now_iso

_SINGULAR = {"space": "spaces", "model": "models", "dataset": "datasets"}


async def whoami(request: Request) -> JSONResponse:
    require_token(request)
    user = context(request).store.user
    return JSONResponse(
        {
            "type": "user",
            "name": user,
            "fullname": user,
            "email": None,
            "orgs": [],
            "auth": {
                "type": "access_token",
                "accessToken": {"displayName": "localhub", "role": "write"},
            },
        }
    )


async def agent_harnesses(request: Request) -> JSONResponse:
    return JSONResponse({"standardEnvVars": [], "harnesses": {}})


async def validate_yaml(request: Request) -> JSONResponse:
    """Accept README metadata that is a YAML mapping (or absent)."""
    content = str((await json_body(request)).get("content", ""))
    try:
        _front_matter(content)
    except ValueError as exc:
        return JSONResponse({"errors": [{"message": str(exc)}], "warnings": []}, 400)
    return JSONResponse({"errors": [], "warnings": []})


async def create_repo(request: Request) -> JSONResponse:
    require_token(request)
    body = await json_body(request)
    ctx = context(request)
    repo_type = _SINGULAR.get(body.get("type") or "model")
    if repo_type is None or not body.get("name"):
        raise HubHTTPError(400, "create needs a name and a type of space, model or dataset")
    repo_id = f"{body.get('organization') or ctx.store.user}/{body['name']}"
    url = repo_url(base_url(request), repo_type, repo_id)
    with ctx.store.lock:
        if ctx.store.repo(repo_type, repo_id) is not None:
            return JSONResponse(
                {"error": f"You already created this {repo_type[:-1]} repo", "url": url}, 409
            )
        private = body.get("visibility", "private" if body.get("private") else "public") != "public"
        ctx.store.save_repo(Repo(repo_type, repo_id, private, body.get("sdk"), now_iso()))
    return JSONResponse({"url": url, "name": repo_id, "id": object_id(f"{repo_type}/{repo_id}")})


async def delete_repo(request: Request) -> JSONResponse:
    require_token(request)
    body = await json_body(request)
    ctx = context(request)
    repo_type = _SINGULAR.get(body.get("type") or "model", "")
    repo_id = f"{body.get('organization') or ctx.store.user}/{body.get('name')}"
    repo = ctx.store.repo(repo_type, repo_id)
    if repo is None:
        raise HubHTTPError(404, f"Repository {repo_id} not found", code="RepoNotFound")
    ctx.store.delete_repo(repo)
    if repo_type == "spaces":
        await ctx.runtimes.forget(repo_id)
    return JSONResponse({})


def repo_dict(
    request: Request, repo: Repo, *, expand: list[str], siblings: bool = True
) -> dict[str, Any]:
    """The repo as ``/api/<type>/<id>`` shows it; with ``expand``, only those keys (and ids)."""
    ctx = context(request)
    card = _card_data(ctx.store, repo)
    data: dict[str, Any] = {
        "_id": object_id(f"{repo.type}/{repo.id}"),
        "id": repo.id,
        "author": repo.id.split("/")[0],
        "sha": repo.head.oid if repo.head else None,
        "private": repo.private,
        "disabled": False,
        "gated": False,
        "likes": 0,
        "createdAt": repo.created_at,
        "lastModified": repo.last_modified,
        "tags": _tags(card, repo),
        "cardData": card,
    }
    if siblings:
        data["siblings"] = [{"rfilename": path} for path in sorted(repo.files())]
    if repo.type == "spaces":
        data["sdk"] = repo.sdk
        data["subdomain"] = repo.id.replace("/", "-").replace("_", "-").lower()
        if not expand or "runtime" in expand:
            data["runtime"] = ctx.runtimes.runtime(repo)
    if expand:
        data = {key: value for key, value in data.items() if key in {"_id", "id", *expand}}
    return data


def _card_data(store: HubStore, repo: Repo) -> dict[str, Any]:
    """The README's metadata at the head commit ({} if none or invalid)."""
    oid = repo.files().get("README.md")
    try:
        return _front_matter(store.blob(oid).decode(errors="replace")) if oid else {}
    except ValueError:
        return {}


def _tags(card: dict[str, Any], repo: Repo) -> list[str]:
    card_tags = card.get("tags")
    tags = [str(tag) for tag in card_tags] if isinstance(card_tags, list) else []
    return tags + ([repo.sdk] if repo.sdk else [])


def _front_matter(text: str) -> dict[str, Any]:
    """The YAML block between leading ``---`` lines; ValueError if it is not a mapping."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    try:
        end = next(i for i, line in enumerate(lines[1:], 1) if line.strip() == "---")
        data = yaml.safe_load("\n".join(lines[1:end])) or {}
    except (StopIteration, yaml.YAMLError) as exc:
        raise ValueError(f"README.md metadata is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError("README.md metadata must be a YAML mapping")
    return data


async def repo_info(request: Request) -> JSONResponse:
    repo = readable_repo(request)
    expand = request.query_params.getlist("expand")
    data = repo_dict(request, repo, expand=expand)
    if "revision" in request.path_params:  # the sha and files at that commit
        sha, files = files_at(repo, request.path_params["revision"])
        data["sha"] = sha
        if "siblings" in data:
            data["siblings"] = [{"rfilename": path} for path in sorted(files)]
    return JSONResponse(data)


async def list_repos(request: Request) -> JSONResponse:
    ctx = context(request)
    query = request.query_params
    authenticated = is_authenticated(request)
    author, search = query.get("author"), (query.get("search") or "").lower()
    expand = query.getlist("expand")
    wanted_tags = set(query.getlist("filter"))
    listed = []
    for repo in ctx.store.repos(repo_type_of(request)):
        if (repo.private and not authenticated) or (author and repo.id.split("/")[0] != author):
            continue
        if search not in repo.id.lower():
            continue
        if wanted_tags <= set(_tags(_card_data(ctx.store, repo), repo)):
            listed.append(
                repo_dict(request, repo, expand=expand, siblings=query.get("full") == "true")
            )
    page, headers = paginated(request, listed)
    return JSONResponse(page, headers=headers)


async def update_settings(request: Request) -> JSONResponse:
    repo = writable_repo(request)
    body = await json_body(request)
    if "visibility" in body:
        repo.private = body["visibility"] != "public"
    elif "private" in body:
        repo.private = bool(body["private"])
    context(request).store.save_repo(repo)
    return JSONResponse({"private": repo.private})


async def preupload(request: Request) -> JSONResponse:
    """Every file is ``regular`` (inline base64 in the commit), so no LFS or Xet is needed."""
    repo = writable_repo(request)
    check_revision(repo, request.path_params["revision"])
    files = repo.files()
    body = await json_body(request)
    return JSONResponse(
        {
            "files": [
                {
                    "path": f["path"],
                    "uploadMode": "regular",
                    "shouldIgnore": False,
                    "oid": files.get(f["path"]),
                }
                for f in body.get("files", [])
            ]
        }
    )


async def commit(request: Request) -> JSONResponse:
    """Apply an NDJSON commit; an unchanged tree creates no commit and answers the head."""
    repo = writable_repo(request)
    check_revision(repo, request.path_params["revision"])
    if request.query_params.get("create_pr"):
        raise HubHTTPError(400, "localhub does not support pull requests")
    ctx = context(request)
    lines = [_ndjson_line(line) for line in (await request.body()).splitlines() if line.strip()]
    if not lines or lines[0].get("key") != "header":
        raise HubHTTPError(400, "a commit starts with a header line")
    header = lines[0].get("value") or {}
    with ctx.store.lock:
        repo = readable_repo(request)
        if header.get("parentCommit") and repo.head and header["parentCommit"] != repo.head.oid:
            raise HubHTTPError(412, "A commit has happened since. Please refresh and try again.")
        files, uploaded = _apply_operations(ctx.store.put_blob, repo.files(), lines[1:])
        created = ctx.store.commit(
            repo,
            title=str(header.get("summary") or "Upload files with localhub"),
            description=str(header.get("description") or ""),
            files=files,
        )
    if created is not None:
        ctx.log.add_commit(uploaded)
        if repo.type == "spaces":
            await ctx.runtimes.deploy(repo)
    oid = created.oid if created else (repo.head.oid if repo.head else None)
    return JSONResponse(
        {
            "success": True,
            "commitOid": oid,
            "commitUrl": f"{repo_url(base_url(request), repo.type, repo.id)}/commit/{oid}",
            "hookOutput": "",
        }
    )


def _ndjson_line(line: bytes) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError as exc:
        raise HubHTTPError(400, f"commit line is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise HubHTTPError(400, "commit lines must be JSON objects")
    return value


def _apply_operations(
    put_blob: Callable[[bytes], str], files: dict[str, str], operations: list[dict[str, Any]]
) -> tuple[dict[str, str], int]:
    """Apply file/deletedFile/deletedFolder lines; returns the new tree and the bytes uploaded."""
    uploaded = 0
    for operation in operations:
        key, value = operation.get("key"), operation.get("value") or {}
        path = str(value.get("path", "")).strip("/")
        if key == "file":
            try:
                content = base64.b64decode(value.get("content", ""), validate=True)
            except binascii.Error as exc:
                raise HubHTTPError(400, f"{path}: content is not base64") from exc
            files[path] = put_blob(content)
            uploaded += len(content)
        elif key == "deletedFile":
            if files.pop(path, None) is None:
                raise HubHTTPError(404, f"{path} does not exist", code="EntryNotFound")
        elif key == "deletedFolder":
            doomed = [p for p in files if p.startswith(f"{path}/") or not path]
            if not doomed:
                raise HubHTTPError(404, f"folder {path} does not exist", code="EntryNotFound")
            for doomed_path in doomed:
                del files[doomed_path]
        elif key == "lfsFile":
            raise HubHTTPError(400, f"{path}: localhub stores every file inline, not in LFS")
        else:
            raise HubHTTPError(400, f"unknown commit operation {key!r}")
    return files, uploaded


async def list_commits(request: Request) -> JSONResponse:
    """The repo's commits, newest first, as ``list_repo_commits`` reads them."""
    repo = readable_repo(request)
    check_revision(repo, request.path_params["revision"])
    entries = [
        {
            "id": c.oid,
            "authors": [{"user": context(request).store.user}],
            "date": c.date,
            "title": c.title,
            "message": c.description,
        }
        for c in reversed(repo.commits)
    ]
    page, headers = paginated(request, entries)
    return JSONResponse(page, headers=headers)


async def list_tree(request: Request) -> JSONResponse:
    repo = readable_repo(request)
    _, files = files_at(repo, request.path_params["revision"])
    store = context(request).store
    folder = request.path_params.get("path", "").strip("/")
    folders = git_tree_oids(files)
    if folder not in folders:
        raise HubHTTPError(404, f"{folder} is not a folder of {repo.id}", code="EntryNotFound")
    recursive = request.query_params.get("recursive") in ("true", "True", "1")
    prefix = f"{folder}/" if folder else ""

    def listed(path: str) -> bool:
        rest = path.removeprefix(prefix)
        return path.startswith(prefix) and bool(rest) and (recursive or "/" not in rest)

    entries: list[dict[str, Any]] = [
        {"type": "directory", "oid": oid, "path": path}
        for path, oid in sorted(folders.items())
        if listed(path)
    ] + [
        {"type": "file", "oid": oid, "size": store.blob_size(oid), "path": path}
        for path, oid in sorted(files.items())
        if listed(path)
    ]
    page, headers = paginated(request, entries)
    return JSONResponse(page, headers=headers)


async def resolve_file(request: Request) -> Response:
    """A file's content at a revision (GET or HEAD), with the headers ``hf_hub_download`` reads."""
    repo = readable_repo(request)
    revision = request.path_params["revision"]
    sha, files = files_at(repo, revision)
    if sha is None:
        raise HubHTTPError(404, f"Revision {revision} not found", code="RevisionNotFound")
    path = request.path_params["path"]
    oid = files.get(path)
    if oid is None:
        error = HubHTTPError(404, f"{path} does not exist at {revision}", code="EntryNotFound")
        response = error.response()
        response.headers["X-Repo-Commit"] = sha
        return response
    content = context(request).store.blob(oid)
    headers = {"X-Repo-Commit": sha, "ETag": f'"{oid}"'}
    return Response(content, media_type="application/octet-stream", headers=headers)


def routes() -> list[Route]:
    """Routes for every repo type; their endpoint names appear in the request log."""
    table = [
        Route("/api/whoami-v2", whoami),
        Route("/api/agent-harnesses", agent_harnesses),
        Route("/api/validate-yaml", validate_yaml, methods=["POST"]),
        Route("/api/repos/create", create_repo, methods=["POST"]),
        Route("/api/repos/delete", delete_repo, methods=["DELETE"]),
    ]
    for kind in REPO_TYPES:
        repo = f"/api/{kind}/{{namespace}}/{{name}}"
        table += [
            Route(f"/api/{kind}", list_repos),
            Route(repo, repo_info),
            Route(f"{repo}/revision/{{revision}}", repo_info),
            Route(f"{repo}/settings", update_settings, methods=["PUT"]),
            Route(f"{repo}/preupload/{{revision}}", preupload, methods=["POST"]),
            Route(f"{repo}/commit/{{revision}}", commit, methods=["POST"]),
            Route(f"{repo}/commits/{{revision}}", list_commits),
            Route(f"{repo}/tree/{{revision}}", list_tree),
            Route(f"{repo}/tree/{{revision}}/{{path:path}}", list_tree),
        ]
    for prefix in ("/spaces", "/datasets", ""):
        resolve = f"{prefix}/{{namespace}}/{{name}}/resolve/{{revision}}/{{path:path}}"
        table.append(Route(resolve, resolve_file))
    return table
