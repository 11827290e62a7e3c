"""ASGI middleware that logs every request and applies the scenario's faults before routing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from releaselib.hub.embedded import MARKER_HEADER
from releaselib.localhub.requestlog import RequestLog, RequestRecord
from releaselib.localhub.scenario import Fault, FaultInjector

#: Requests under this prefix (the counters themselves) are neither logged nor faulted.
CONTROL_PREFIX = "/__localhub/"


class TrafficMiddleware:
    """Logs method, path, endpoint name, status and request bytes; injects faults; marks each
    answer with ``builder`` when given one (the Hub API, not the Space domains), as
    :mod:`releaselib.hub.embedded` reads it."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        log: RequestLog,
        injector: FaultInjector,
        endpoint_of: Callable[[Scope], str | None],
        builder: str | None = None,
    ) -> None:
        self.app = app
        self.log = log
        self.injector = injector
        self.endpoint_of = endpoint_of
        self.marker = [(MARKER_HEADER.encode(), builder.encode())] if builder else []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(CONTROL_PREFIX):
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        endpoint = self.endpoint_of(scope)
        received = 0
        status: int | None = None
        logged = False
        gone = False  # the client hung up: nothing sent after that reaches it

        def log_once() -> None:
            nonlocal logged
            if not logged:
                logged = True
                self.log.add(RequestRecord(method, path, endpoint, status, received, gone))

        async def counting_receive() -> Message:
            nonlocal received, gone
            message = await receive()
            received += len(message.get("body", b""))
            gone = gone or message["type"] == "http.disconnect"
            return message

        async def recording_send(message: Message) -> None:
            nonlocal status
            if gone:
                return  # e.g. starlette's 500 for the ClientDisconnect: logged as client gone
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", []), *self.marker]}
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                log_once()  # before the client can see the end of the answer
            await send(message)

        try:
            fault = self.injector.decide(method, path, endpoint)
            if fault is None:
                await self.app(scope, counting_receive, recording_send)
            else:
                await self._misbehave(
                    fault, scope, counting_receive, recording_send, send, log_once
                )
        except ClientDisconnect:
            pass  # the client hung up mid-request (a release cut short), not a Hub error
        finally:
            log_once()

    async def _misbehave(
        self,
        fault: Fault,
        scope: Scope,
        receive: Receive,
        send: Send,
        raw_send: Send,
        log_drop: Callable[[], None],
    ) -> None:
        if fault.delay:
            await asyncio.sleep(fault.delay)
        if fault.drop:
            await _drain(receive)
            log_drop()
            _drop_connection(raw_send)
        elif fault.status is not None or fault.body is not None:
            await _drain(receive)
            headers = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
            status = fault.status or 200
            answer: Response
            if fault.body is not None:
                answer = Response(fault.body, status, headers, fault.content_type)
            else:
                answer = JSONResponse(
                    {"error": f"localhub scenario: injected {status}"}, status, headers
                )
            await answer(scope, receive, send)
        else:
            await self.app(scope, receive, send)


async def _drain(receive: Receive) -> None:
    while (await receive()).get("more_body", False):
        pass


def _drop_connection(send: Send) -> None:
    """Close the socket with no response (uvicorn's h11 cycle owns ``send``)."""
    cycle = getattr(send, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if cycle is None or transport is None:
        raise RuntimeError("dropping a connection needs uvicorn's h11 protocol")
    cycle.disconnected = True  # so uvicorn does not answer 500 for us
    transport.close()
