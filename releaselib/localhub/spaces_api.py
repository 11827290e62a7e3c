"""Hub API routes that only Spaces have: runtime, restart, pause, variables, secrets."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from releaselib.localhub.apicommon import (
    HubHTTPError,
    context,
    json_body,
    readable_repo,
    writable_repo,
)
from releaselib.localhub.store import Repo, now_iso

_SPACE = "/api/spaces/{namespace}/{name}"


async def space_runtime(request: Request) -> JSONResponse:
    return JSONResponse(context(request).runtimes.runtime(readable_repo(request)))


async def build_logs(request: Request) -> Response:
    """The latest build's log as the Hub's server-sent events (``fetch_space_logs(build=True)``)."""
    return _events(*context(request).runtimes.build_log(writable_repo(request)))


async def run_logs(request: Request) -> Response:
    """The latest run's stdout and stderr, as the Hub serves them (``fetch_space_logs()``)."""
    return _events(*context(request).runtimes.run_log(writable_repo(request)))


def _events(text: str, written: float) -> Response:
    """``text``, one server-sent event per line, as ``GET /api/spaces/{id}/logs/*`` answers."""
    # whole seconds: the client stops at events later than the Date header (1 s resolution) + 1 s
    stamp = datetime.fromtimestamp(int(written), UTC).isoformat().replace("+00:00", "Z")
    events = (
        f"data: {json.dumps({'data': line + chr(10), 'timestamp': stamp})}\n\n"
        for line in text.splitlines()
    )
    return Response("".join(events), media_type="text/event-stream")


async def restart_space(request: Request) -> JSONResponse:
    repo = writable_repo(request)
    factory = request.query_params.get("factory") in ("true", "True", "1")
    return JSONResponse(await context(request).runtimes.restart(repo, factory=factory))


async def pause_space(request: Request) -> JSONResponse:
    repo = writable_repo(request)
    return JSONResponse(await context(request).runtimes.pause(repo))


async def space_variables(request: Request) -> JSONResponse:
    """GET lists, POST sets, DELETE removes; changes restart a deployed Space, as on the Hub."""
    repo = await _change_settings(request, "variables")
    return JSONResponse(repo.variables)


async def space_secrets(request: Request) -> JSONResponse:
    """Like variables, but values are never shown."""
    repo = await _change_settings(request, "secrets")
    return JSONResponse(
        {
            key: {k: v for k, v in entry.items() if k != "value"}
            for key, entry in repo.secrets.items()
        }
    )


async def _change_settings(request: Request, kind: str) -> Repo:
    if request.method == "GET":
        return writable_repo(request)
    repo = writable_repo(request)
    body = await json_body(request)
    key = body.get("key")
    if not isinstance(key, str) or not key:
        raise HubHTTPError(400, f"{kind} need a key")
    settings = repo.variables if kind == "variables" else repo.secrets
    if request.method == "DELETE":
        settings.pop(key, None)
    else:
        settings[key] = {"value": str(body.get("value", "")), "updatedAt": now_iso()}
        if body.get("description"):
            settings[key]["description"] = str(body["description"])
    ctx = context(request)
    ctx.store.save_repo(repo)
    if repo.head is not None and ctx.runtimes.runtime(repo)["stage"] != "PAUSED":
        await ctx.runtimes.restart(repo, factory=False)
    return repo


def routes() -> list[Route]:
    methods = ["GET", "POST", "DELETE"]
    return [
        Route(f"{_SPACE}/runtime", space_runtime),
        Route(f"{_SPACE}/logs/build", build_logs),
        Route(f"{_SPACE}/logs/run", run_logs),
        Route(f"{_SPACE}/restart", restart_space, methods=["POST"]),
        Route(f"{_SPACE}/pause", pause_space, methods=["POST"]),
        Route(f"{_SPACE}/variables", space_variables, methods=methods),
        Route(f"{_SPACE}/secrets", space_secrets, methods=methods),
    ]
