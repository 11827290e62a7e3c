"""Runtime probes of a running env server: ``/health``, ``/reset``, and a schema-derived ``/step``.

``probe_base_url`` answers PASS only when ``POST /reset`` returns an observation and ``POST /step``
is accepted; ``/health`` alone is never a PASS. FAIL rests only on the env's own HTTP answer: a
5xx or other error status, or a body that is not an observation. Everything on our side of the
wire (TLS verification, DNS, a proxy, a connection refused or reset before any answer, our own
time-out, a 422 naming the body we sent) and every answer from whatever stands in front of the
env on any path (a 401/403 refusing our token, a 429 rate limit, a redirect, never followed) is
INCONCLUSIVE with ``our_error`` set and a remedy in the reason (see :mod:`releaselib.hub.wire`).
A 429
whose Retry-After is short is retried once.

OpenEnv's HTTP ``/reset`` and ``/step`` are stateless (each request builds a fresh env), so an env
that needs a reset before a step answers a bare ``POST /step`` with an error. When the HTTP episode
FAILs at ``/reset`` or ``/step``, the same episode is tried over ``WS /ws`` (OpenEnv's stateful
episode, what the env's own client uses); only a whole episode there turns the FAIL into a PASS,
and in every other case the HTTP verdict stands, its reason adding what ``/ws`` said.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from websockets.exceptions import InvalidStatus, WebSocketException
from websockets.sync.client import connect as ws_connect

from releaselib.hub.wire import wire_problem

BODY_CHARS = 300
#: The longest Retry-After (seconds) a rate-limited request waits for before its one retry.
RETRY_AFTER_MAX = 5.0


class Outcome(enum.Enum):
    """The verdict on one server; the value is what gets printed."""

    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"


@dataclass(frozen=True)
class Exchange:
    """One request of a probe: ``status`` is None when no answer came. Over ``/ws`` the method
    is ``WS``, the path ``/ws`` (the handshake) or the message type sent, and an answered
    message has the connection's status, 101."""

    method: str
    path: str
    status: int | None
    body: str
    seconds: float

    def __str__(self) -> str:
        status = self.status if self.status is not None else "---"
        return f"{self.method:4} {self.path:8} {status} {self.seconds:6.2f}s  {self.body}"


@dataclass(frozen=True)
class ProbeResult:
    """The outcome, why, and every request made on the way."""

    outcome: Outcome
    reason: str
    transcript: tuple[Exchange, ...]
    our_error: bool = False

    @property
    def health_only(self) -> bool:
        """A FAIL that rests on ``GET /health`` alone: evidence only when every READY domain of
        a RUNNING Space gives it."""
        return (
            self.outcome is Outcome.FAIL
            and bool(self.transcript)
            and self.transcript[-1].path == "/health"
        )

    def redacted(self) -> ProbeResult:
        """This result with each secret in the Space's words (reason, bodies) redacted."""
        from releaselib.stage.secretscan import redact_secrets as clean  # slow to import

        bodies = tuple(dataclasses.replace(e, body=clean(e.body)) for e in self.transcript)
        return dataclasses.replace(self, reason=clean(self.reason), transcript=bodies)

    def render(self) -> str:
        """The verdict line followed by the transcript, one request a line."""
        lines = [f"{self.outcome.value}: {self.reason}"]
        return "\n".join(lines + [f"  {exchange}" for exchange in self.transcript])


class _Stop(Exception):
    """Ends a probe early with its verdict."""

    def __init__(
        self, outcome: Outcome, reason: str, *, our_error: bool = False, episode: bool = False
    ) -> None:
        super().__init__(reason)
        self.outcome, self.reason, self.our_error = outcome, reason, our_error
        self.episode = episode  # a FAIL on the env's answer to POST /reset or POST /step


@dataclass(frozen=True)
class _Answer:
    status: int
    data: Any  # the parsed JSON body, or None when it is not JSON


class _Session:
    """An httpx client that records every exchange and turns transport failures into _Stop."""

    def __init__(self, client: httpx.Client, socket: _Socket | None) -> None:
        self.client = client
        self.socket = socket  # where the /ws episode goes; None: not tried
        self.transcript: list[Exchange] = []

    def send(self, method: str, path: str, body: Any = None) -> _Answer:
        """The answer to one request; _Stop for no answer or one that is not the env's."""
        response = self._request(method, path, body)
        if response.status_code == 429 and (pause := _retry_after(response)) is not None:
            time.sleep(pause)
            response = self._request(method, path, body)
        _refuse_front_door(f"{method} {path}", response)
        try:
            data = response.json()
        except ValueError:
            data = None
        return _Answer(response.status_code, data)

    def _request(self, method: str, path: str, body: Any) -> httpx.Response:
        start = time.monotonic()
        try:
            response = self.client.request(method, path, json=body)
        except httpx.TransportError as exc:
            problem = wire_problem(exc, timeout=self.client.timeout.read)
            self._record(method, path, None, f"{type(exc).__name__}: {problem.detail}", start)
            reason = f"{method} {path}: {problem.what} ({problem.detail}); {problem.remedy}"
            raise _Stop(Outcome.INCONCLUSIVE, reason, our_error=True) from exc
        self._record(method, path, response.status_code, response.text, start)
        return response

    def _record(self, method: str, path: str, status: int | None, body: str, start: float) -> None:
        seconds = time.monotonic() - start
        self.transcript.append(Exchange(method, path, status, trim(body), seconds))


def _retry_after(response: httpx.Response) -> float | None:
    """The seconds a 429's Retry-After asks for, when short enough to wait once; else None."""
    try:
        seconds = float(response.headers.get("Retry-After", ""))
    except ValueError:
        return None
    return max(seconds, 0.0) if seconds <= RETRY_AFTER_MAX else None


def _refuse_front_door(what: str, response: httpx.Response) -> None:
    """_Stop (INCONCLUSIVE, ours) for an answer that is not the env's: a 401/403 for our token,
    a 429 rate limit, a redirect (a login or front door; never followed)."""
    status = response.status_code
    if status in (401, 403):
        reason = (
            f"{what} answered {status}: our token was refused or may not read the Space; "
            "check that HF_TOKEN can read the Space, then verify again"
        )
    elif status == 429:
        wait = response.headers.get("Retry-After")
        after = f" (Retry-After {wait} s)" if wait else ""
        reason = f"{what} answered 429: rate limited{after}; rerun later"
    elif 300 <= status < 400:
        to = response.headers.get("Location", "elsewhere")
        reason = (
            f"{what} answered {status}, a redirect to {to} (not followed): a login or front-door "
            "redirect, not the env; check HF_TOKEN can read the Space, then verify again"
        )
    else:
        return
    raise _Stop(Outcome.INCONCLUSIVE, reason, our_error=True)


def trim(text: str, limit: int = BODY_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def probe_base_url(
    url: str,
    *,
    timeout: float,
    step_body: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    transport: httpx.BaseTransport | None = None,
    verify: ssl.SSLContext | bool = True,
) -> ProbeResult:
    """Probe the env server at ``url``; ``timeout`` applies to each request.

    Without ``step_body`` the step is built from ``GET /schema``'s action schema. ``verify``
    is the TLS context for https URLs (a shared one saves loading the CA bundle per probe).
    With a ``transport`` (an in-process server) there is no socket, so ``/ws`` is not tried.
    """
    socket = None if transport else _Socket.of(url, headers or {}, verify, timeout)
    with httpx.Client(
        base_url=url,
        timeout=timeout,
        headers=dict(headers or {}),
        transport=transport,
        verify=verify,
    ) as client:
        session = _Session(client, socket)
        try:
            reason = _probe(session, step_body)
        except _Stop as stop:
            transcript = tuple(session.transcript)
            return ProbeResult(stop.outcome, stop.reason, transcript, stop.our_error).redacted()
    return ProbeResult(Outcome.PASS, reason, tuple(session.transcript)).redacted()


def _probe(session: _Session, step_body: Mapping[str, Any] | None) -> str:
    health = session.send("GET", "/health")
    if health.status != 200:
        raise _Stop(Outcome.FAIL, f"GET /health answered {health.status}")
    body = dict(step_body) if step_body is not None else None
    try:
        reset = session.send("POST", "/reset", {})
        _expect_observation("POST /reset", reset, {})
        body = body if body is not None else _schema_step_body(session)
        step = session.send("POST", "/step", body)
        _expect_observation("POST /step", step, body)
    except _Stop as stop:
        if not stop.episode or session.socket is None:
            raise
        return _over_ws(session, session.socket, stop, body)
    return "reset and step answered with observations"


def _over_ws(session: _Session, socket: _Socket, http: _Stop, body: dict[str, Any] | None) -> str:
    """The PASS reason when the whole episode passes over ``/ws``; else the HTTP FAIL ``http``
    again, its reason adding what ``/ws`` said."""
    try:
        body = body if body is not None else _schema_step_body(session)
    except _Stop as schema:
        raise _Stop(http.outcome, f"{http.reason}; /ws not tried: {schema.reason}") from None
    action = body.get("action")
    if not isinstance(action, dict):
        raise _Stop(http.outcome, f"{http.reason}; /ws not tried: the step body has no action")
    said = _ws_episode(socket, action, session.transcript)
    if said is not None and said.startswith(_NOT_THE_ENV):
        raise _Stop(
            Outcome.INCONCLUSIVE,
            f"{http.reason}; over /ws {said}, so the episode an env behind a stateless HTTP API "
            "needs was not tried; check HF_TOKEN and the network, then verify again",
            our_error=True,
        )
    if said is not None and said.startswith(_REJECTED_STEP):
        raise _Stop(
            Outcome.INCONCLUSIVE,
            f"probe error: {http.reason}; over /ws reset answered an observation but {said} "
            f"(our body {json.dumps(action)}); fix the probe (a plugin step body), not the env",
            our_error=True,
        )
    if said is not None:
        raise _Stop(http.outcome, f"{http.reason}; over /ws {said}")
    return f"reset and step answered over /ws (HTTP {http.reason}; OpenEnv's HTTP API is stateless)"


@dataclass(frozen=True)
class _Socket:
    """Where the ``/ws`` episode connects, with the HTTP probe's headers, TLS and time-out."""

    uri: str
    headers: dict[str, str]
    verify: ssl.SSLContext | bool
    timeout: float

    @classmethod
    def of(
        cls, url: str, headers: Mapping[str, str], verify: ssl.SSLContext | bool, timeout: float
    ) -> _Socket:
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


def _ws_episode(socket: _Socket, action: dict[str, Any], transcript: list[Exchange]) -> str | None:
    """None when ``reset`` then ``step`` over ``/ws`` both answer observations; else what
    ``/ws`` said. Each handshake and message goes into ``transcript``."""
    sending, start = "/ws", time.monotonic()

    def record(status: int | None, body: str) -> None:
        transcript.append(Exchange("WS", sending, status, trim(body), time.monotonic() - start))

    try:
        with ws_connect(
            socket.uri,
            additional_headers=socket.headers,
            ssl=socket.tls(),
            open_timeout=socket.timeout,
            close_timeout=socket.timeout,
        ) as connection:
            record(101, "")
            for sending, data in (("reset", {}), ("step", action)):
                start = time.monotonic()
                connection.send(json.dumps({"type": sending, "data": data}))
                text = connection.recv(timeout=socket.timeout, decode=True)
                record(101, text)
                if (problem := _not_an_observation(text)) is not None:
                    return f"{sending} answered {problem}"
            connection.send(json.dumps({"type": "close"}))
    except InvalidStatus as exc:
        status = exc.response.status_code
        record(status, (exc.response.body or b"").decode(errors="replace"))
        front_door = status in (401, 403, 407, 429) or 300 <= status < 400
        return f"{_NOT_THE_ENV if front_door else ''}the handshake answered {status}"
    except (OSError, TimeoutError, WebSocketException) as exc:
        record(None, f"{type(exc).__name__}: {exc}")
        what = "the handshake" if sending == "/ws" else sending
        return f"{_NOT_THE_ENV}{what} had no answer ({type(exc).__name__}: {trim(str(exc), 200)})"
    return None


#: How ``_ws_episode`` begins when the env validated our step body and refused it (our error).
_REJECTED_STEP = "step answered 'error' VALIDATION_ERROR"
#: How it begins when the answer is not the env's (a front door, our time-out, no connection).
_NOT_THE_ENV = "(not the env) "


def _not_an_observation(text: str) -> str | None:
    """None for an ``observation`` message; else what the message is, e.g. its error."""
    try:
        message = json.loads(text)
    except ValueError:
        return "with something that is not JSON"
    if not isinstance(message, dict):
        return "with something that is not a message"
    data = message.get("data")
    if message.get("type") == "observation":
        if isinstance(data, dict) and "observation" in data:
            return None
        return "'observation' without an observation in its data"
    data = data if isinstance(data, dict) else {}
    code = f" {data['code']}" if data.get("code") else ""
    detail = f": {data['message']}" if data.get("message") else ""
    return trim(f"{message.get('type')!r}{code}{detail}", 200)


def _expect_observation(what: str, answer: _Answer, sent: Mapping[str, Any]) -> None:
    locations = _error_locations(answer.data) if answer.status == 422 else None
    if locations is not None:
        raise _Stop(
            Outcome.INCONCLUSIVE,
            f"probe error: {what} rejected our body {json.dumps(sent)} "
            f"({locations}); fix the probe (a plugin step body), not the env",
            our_error=True,
        )
    if answer.status != 200:
        raise _Stop(Outcome.FAIL, f"{what} answered {answer.status}", episode=True)
    if not isinstance(answer.data, dict) or "observation" not in answer.data:
        raise _Stop(Outcome.FAIL, f"{what} answered 200 without an observation", episode=True)


def _error_locations(data: Any) -> str | None:
    """Where a 422's validation errors point into our body, e.g. ``at body.action, message``;
    None when the answer names no part of it (then it is the server's answer, not ours)."""
    details = data.get("detail") if isinstance(data, dict) else None
    if not isinstance(details, list):
        return None
    locations = [
        ".".join(str(part) for part in item["loc"])
        for item in details
        if isinstance(item, dict) and isinstance(item.get("loc"), list) and item["loc"]
    ]
    return "at " + ", ".join(locations) if locations else None


def _schema_step_body(session: _Session) -> dict[str, Any]:
    schema = session.send("GET", "/schema")
    if schema.status != 200:
        raise _Stop(Outcome.FAIL, f"GET /schema answered {schema.status}")
    action = schema.data.get("action") if isinstance(schema.data, dict) else None
    if not isinstance(action, dict):
        raise _Stop(Outcome.FAIL, "GET /schema has no action schema")
    return step_body_for(action)


def step_body_for(action_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``/step`` body for an action JSON schema: ``{"action": <minimal valid action>}``."""
    return {"action": example_value(action_schema, action_schema.get("$defs", {}))}


def example_value(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int = 0) -> Any:
    """A minimal value satisfying ``schema``: its default, const or first enum value, else
    the required properties of an object and the smallest value of a scalar type."""
    if depth > 20:
        return None
    schema = _resolve(schema, defs)
    for key in ("default", "const"):
        if key in schema:
            return schema[key]
    if schema.get("enum"):
        return schema["enum"][0]
    options = schema.get("anyOf") or schema.get("oneOf") or schema.get("allOf")
    if options:
        chosen = next((o for o in options if _resolve(o, defs).get("type") != "null"), options[0])
        return example_value(chosen, defs, depth + 1)
    return _typed_value(schema, defs, depth)


def _typed_value(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int) -> Any:
    kind = schema.get("type", "object" if "properties" in schema else None)
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties", {})
        return {
            name: example_value(properties.get(name, {}), defs, depth + 1)
            for name in schema.get("required", ())
        }
    if kind == "array":
        item = example_value(schema.get("items", {}), defs, depth + 1)
        return [item] * int(schema.get("minItems", 0))
    if kind == "string":
        return "a" * int(schema.get("minLength", 0))
    if kind in ("integer", "number"):
        return _smallest_number(schema, kind)
    if kind == "boolean":
        return False
    return None


def _smallest_number(schema: Mapping[str, Any], kind: str) -> int | float:
    if "minimum" in schema:
        value = schema["minimum"]
    elif "exclusiveMinimum" in schema:
        value = schema["exclusiveMinimum"] + 1
    else:
        value = 0
    return int(value) if kind == "integer" else float(value)


def _resolve(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    """Follow a local ``$ref`` (``#/$defs/Name`` or ``#/definitions/Name``)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target = defs.get(ref.rsplit("/", 1)[-1])
        if isinstance(target, Mapping):
            return _resolve(target, defs)
    return schema
