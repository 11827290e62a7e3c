"""A Space's domains: https listeners on 127.0.0.1 that forward to the Space's process.

Like ``*.hf.space``: a private Space's domain answers a generic 404 unless the request carries
``Authorization: Bearer <token>``; a sleeping Space wakes on its first request.
"""

from __future__ import annotations

from typing import Protocol

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from releaselib.localhub.middleware import TrafficMiddleware
from releaselib.localhub.requestlog import RequestLog
from releaselib.localhub.scenario import FaultInjector
from releaselib.localhub.serving import ServedApp
from releaselib.localhub.tls import TlsFiles

#: The endpoint name domain requests carry in the request log and in scenario faults.
DOMAIN_ENDPOINT = "space_domain"

_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
_HOP_HEADERS = {
    b"host",
    b"authorization",
    b"connection",
    b"keep-alive",
    b"transfer-encoding",
    b"content-length",
    b"content-encoding",
    b"upgrade",
}


class SpaceGate(Protocol):
    """What a domain asks the Space runtime."""

    def visible(self, repo_id: str, authorization: str | None) -> bool: ...

    async def backend_port(self, repo_id: str) -> int | None:
        """The port of the running process (waking a sleeping Space); None if it is not serving."""
        ...


class SpaceDomain:
    """One domain of one Space; ``address`` is what the runtime lists as ``domain``."""

    def __init__(
        self,
        repo_id: str,
        *,
        gate: SpaceGate,
        client: httpx.AsyncClient,
        tls: TlsFiles,
        log: RequestLog,
        injector: FaultInjector,
        answers_404: bool = False,
    ) -> None:
        self.repo_id = repo_id
        self._gate = gate
        self._client = client
        self._answers_404 = answers_404
        app = Starlette(routes=[Route("/{path:path}", self._forward, methods=_METHODS)])
        traffic = TrafficMiddleware(
            app, log=log, injector=injector, endpoint_of=lambda scope: DOMAIN_ENDPOINT
        )
        self._served = ServedApp(traffic, tls=tls)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self._served.port}"

    async def start(self) -> None:
        await self._served.start()

    async def stop(self) -> None:
        await self._served.stop()

    async def _forward(self, request: Request) -> Response:
        authorization = request.headers.get("authorization")
        if self._answers_404 or not self._gate.visible(self.repo_id, authorization):
            return JSONResponse({"error": "Not Found"}, 404)
        port = await self._gate.backend_port(self.repo_id)
        if port is None:
            return JSONResponse({"error": f"Space {self.repo_id} is not running"}, 503)
        query = f"?{request.url.query}" if request.url.query else ""
        url = f"http://127.0.0.1:{port}{request.url.path}{query}"
        headers = [(k, v) for k, v in request.headers.raw if k.lower() not in _HOP_HEADERS]
        try:
            upstream = await self._client.request(
                request.method, url, headers=headers, content=await request.body()
            )
        except httpx.TransportError as exc:
            return JSONResponse({"error": f"Space {self.repo_id} did not answer: {exc}"}, 502)
        response = Response(upstream.content, upstream.status_code)
        response.raw_headers += [
            (k, v) for k, v in upstream.headers.raw if k.lower() not in _HOP_HEADERS
        ]
        return response
