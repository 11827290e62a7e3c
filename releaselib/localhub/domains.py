"""A Space's domains: https listeners on 127.0.0.1 that forward to the Space's process.

Like ``*.hf.space``: a private Space's domain answers a generic 404 unless the request carries
``Authorization: Bearer <token>``; a sleeping Space wakes on its first request. WebSockets are
proxied too, behind the same gate, frame by frame until either side closes.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Protocol

import httpx
import websockets
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState
from websockets.asyncio.client import ClientConnection

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

#: How a proxied WebSocket's end shows: either side gone.
_CLOSED = (websockets.ConnectionClosed, WebSocketDisconnect, OSError)


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
        app = Starlette(
            routes=[
                Route("/{path:path}", self._forward, methods=_METHODS),
                WebSocketRoute("/{path:path}", self._forward_websocket),
            ]
        )
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

    async def _backend(self, authorization: str | None) -> int | Response:
        """The port of the Space's process, or what a request gets instead: the generic 404
        behind the gate, a 503 when the Space is not running."""
        if self._answers_404 or not self._gate.visible(self.repo_id, authorization):
            return JSONResponse({"error": "Not Found"}, 404)
        port = await self._gate.backend_port(self.repo_id)
        if port is None:
            return JSONResponse({"error": f"Space {self.repo_id} is not running"}, 503)
        return port

    async def _forward(self, request: Request) -> Response:
        port = await self._backend(request.headers.get("authorization"))
        if isinstance(port, Response):
            return port
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

    async def _forward_websocket(self, websocket: WebSocket) -> None:
        port = await self._backend(websocket.headers.get("authorization"))
        if isinstance(port, Response):
            await websocket.send_denial_response(port)
            return
        query = f"?{websocket.url.query}" if websocket.url.query else ""
        url = f"ws://127.0.0.1:{port}{websocket.url.path}{query}"
        try:
            upstream = await websockets.connect(url, max_size=None)
        except (OSError, TimeoutError, websockets.WebSocketException) as exc:
            answer = JSONResponse({"error": f"Space {self.repo_id} did not answer: {exc}"}, 502)
            await websocket.send_denial_response(answer)
            return
        await websocket.accept()
        async with upstream:
            await _pump(websocket, upstream)


async def _pump(client: WebSocket, upstream: ClientConnection) -> None:
    """Copy text and binary frames both ways until either side closes, then close the other."""

    async def to_upstream() -> None:
        while (message := await client.receive())["type"] != "websocket.disconnect":
            text = message.get("text")
            await upstream.send(text if text is not None else message.get("bytes") or b"")

    async def to_client() -> None:
        async for frame in upstream:
            await (client.send_text(frame) if isinstance(frame, str) else client.send_bytes(frame))

    tasks = [asyncio.create_task(to_upstream()), asyncio.create_task(to_client())]
    done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    for task in done:
        error = task.exception()
        if error is not None and not isinstance(error, _CLOSED):
            raise error
    if client.client_state is WebSocketState.CONNECTED:
        with contextlib.suppress(*_CLOSED):
            await client.close(upstream.close_code or 1000)
