"""The ``/ws`` episode a probe falls back on: OpenEnv's stateful ``reset`` then ``step`` over
a WebSocket, what the env's own client uses (its HTTP ``/reset`` and ``/step`` are stateless)."""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from websockets.exceptions import InvalidStatus, WebSocketException
from websockets.sync.client import connect as ws_connect

from releaselib.verify.actions import LIST_TOOLS, call_tool_body
from releaselib.verify.exchange import Exchange, sent_text, trim
from releaselib.verify.usable import error_in, is_observation


@dataclass(frozen=True)
class Socket:
    """Where the ``/ws`` episode connects, with the HTTP probe's headers, TLS and time-out."""

    uri: str
    headers: dict[str, str]
    verify: ssl.SSLContext | bool
    timeout: float

    @classmethod
    def of(
        cls, url: str, headers: Mapping[str, str], verify: ssl.SSLContext | bool, timeout: float
    ) -> Socket:
        base = httpx.URL(url)
        scheme = "wss" if base.scheme == "https" else "ws"
        uri = base.copy_with(scheme=scheme, path=base.path.rstrip("/") + "/ws")
        return cls(str(uri), dict(headers), verify, timeout)

    def tls(self) -> ssl.SSLContext | None:
        """The TLS context for a ``wss`` URI (made only when one is needed); None for ``ws``."""
        if not self.uri.startswith("wss:"):
            return None
        if isinstance(self.verify, ssl.SSLContext):
            return self.verify
        context = ssl.create_default_context()
        if not self.verify:
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        return context


#: How many of the socket's time-outs a whole episode may take: the handshake, up to three
#: messages, and the close.
EPISODE_TIMEOUTS = 6
#: A handshake's own time-out (websockets' open_timeout) and a margin for its thread to end.
HANDSHAKE_MARGIN = 1.5
#: How many connections a hung handshake gets.
HANDSHAKES = 2


def ws_episode(
    socket: Socket,
    action: dict[str, Any] | None,
    transcript: list[Exchange],
    reset: Mapping[str, Any] | None = None,
) -> str | None:
    """None when ``reset`` then ``step`` over ``/ws`` both answer usable observations; else
    what ``/ws`` said. ``reset`` is the reset's data (a plugin's ``/reset`` probe body; ``{}``
    when None). ``action`` None: a tool-calling env, so the step lists the tools, then calls
    the first. Each handshake and message goes into ``transcript``.

    The episode runs on a daemon thread under one deadline: websockets' sync client can wait
    without a limit for its own receiving thread when a handshake fails half-way (seen behind
    a proxy on a loaded machine), and our wait must never decide more than our time-out. A
    handshake that has no end within its own time-out is ours, so it is tried once more on a
    new connection."""
    limit, waited = socket.timeout * EPISODE_TIMEOUTS, socket.timeout * HANDSHAKE_MARGIN
    for _ in range(HANDSHAKES):
        seen: list[Exchange] = []
        said: list[str | None] = []
        opened = threading.Event()
        worker = threading.Thread(
            target=_run, args=(socket, action, dict(reset or {}), seen, opened, said), daemon=True
        )
        worker.start()
        handshake = opened.wait(waited)
        if handshake:
            worker.join(limit)
        transcript.extend(list(seen))
        if said:
            return said[0]
        if handshake:
            transcript.append(Exchange("WS", "/ws", None, f"no end within {limit:g} s", limit))
            said.append(f"the episode had no end within our limit of {limit:g} s")
            return f"{NOT_THE_ENV}{said[-1]} (hung connection)"
        transcript.append(
            Exchange("WS", "/ws", None, f"no handshake end within {waited:g} s", waited)
        )
    return (
        f"{NOT_THE_ENV}the handshake had no end within our limit of {waited:g} s, "
        f"{HANDSHAKES} times (hung connection)"
    )


def _run(
    socket: Socket,
    action: dict[str, Any] | None,
    reset: dict[str, Any],
    transcript: list[Exchange],
    opened: threading.Event,
    said: list[str | None],
) -> None:
    """The episode on its thread; ``opened`` is set at the handshake and again at the end, so
    a handshake refused at once is not waited for."""
    try:
        said.append(_episode(socket, action, reset, transcript, opened))
    finally:
        opened.set()


def _episode(
    socket: Socket,
    action: dict[str, Any] | None,
    reset: dict[str, Any],
    transcript: list[Exchange],
    opened: threading.Event,
) -> str | None:
    sending, start = "/ws", time.monotonic()

    def record(status: int | None, body: str, sent: str = "") -> None:
        seconds = time.monotonic() - start
        transcript.append(Exchange("WS", sending, status, trim(body), seconds, sent))

    try:
        with ws_connect(
            socket.uri,
            additional_headers=socket.headers,
            ssl=socket.tls(),
            open_timeout=socket.timeout,
            close_timeout=socket.timeout,
        ) as connection:
            opened.set()
            record(101, "")

            def answer(kind: str, data: dict[str, Any]) -> tuple[str | None, Any]:
                nonlocal sending, start
                sending, start = kind, time.monotonic()
                message = {"type": kind, "data": data}
                connection.send(json.dumps(message))
                text = connection.recv(timeout=socket.timeout, decode=True)
                record(101, text, sent_text(message))
                return _not_an_observation(text, kind == "reset"), text

            if (problem := answer("reset", reset)[0]) is not None:
                return f"reset answered {problem}"
            if action is None:
                problem, text = answer("step", LIST_TOOLS["action"])
                if problem is not None:
                    return f"step list_tools answered {problem}"
                call = call_tool_body(_tools(text))
                if call is None:
                    return "step list_tools answered no tool to call"
                action = call["action"]
            if (problem := answer("step", action)[0]) is not None:
                return f"step answered {problem}"
            connection.send(json.dumps({"type": "close"}))
    except InvalidStatus as exc:
        status = exc.response.status_code
        record(status, (exc.response.body or b"").decode(errors="replace"))
        front_door = status in (401, 403, 407, 429) or 300 <= status < 400
        return f"{NOT_THE_ENV if front_door else ''}the handshake answered {status}"
    except (OSError, TimeoutError, WebSocketException) as exc:
        record(None, f"{type(exc).__name__}: {exc}")
        what = "the handshake" if sending == "/ws" else sending
        return f"{NOT_THE_ENV}{what} had no answer ({type(exc).__name__}: {trim(str(exc), 200)})"
    return None


def _tools(text: str) -> list[Any]:
    """The tools a ``list_tools`` observation message lists."""
    observation = json.loads(text)["data"]["observation"]
    tools = observation.get("tools") if isinstance(observation, dict) else None
    return tools if isinstance(tools, list) else []


#: How ``ws_episode`` begins when the env validated our step body and refused it (our error).
REJECTED_STEP = "step answered 'error' VALIDATION_ERROR"
#: How it begins when the answer is not the env's (a front door, our time-out, no connection).
NOT_THE_ENV = "(not the env) "
#: What it says of an observation that carries an error (see :mod:`releaselib.verify.usable`).
ERROR_OBSERVATION = "an observation with "


def _not_an_observation(text: str, first_reset: bool) -> str | None:
    """None for an ``observation`` message of usable data; else what the message is, e.g. its
    error."""
    try:
        message = json.loads(text)
    except ValueError:
        return "with something that is not JSON"
    if not isinstance(message, dict):
        return "with something that is not a message"
    data = message.get("data")
    if message.get("type") == "observation":
        if is_observation(data):
            error = error_in(data, first_reset=first_reset)
            return None if error is None else ERROR_OBSERVATION + error
        return "'observation' without an observation in its data"
    data = data if isinstance(data, dict) else {}
    code = f" {data['code']}" if data.get("code") else ""
    detail = f": {data['message']}" if data.get("message") else ""
    return trim(f"{message.get('type')!r}{code}{detail}", 200)
