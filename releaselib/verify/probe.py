"""Runtime probes of a running env server: ``/health``, ``/reset``, a schema-correct ``/step``,
and a plugin's own requests.

``probe_base_url`` answers PASS only when ``POST /reset`` and ``POST /step`` answer usable data
(observations that carry no error, see :mod:`releaselib.verify.usable`); ``/health`` alone is
never a PASS. The step is built from ``GET /schema``'s action schema; for a tool-calling (MCP)
env it lists the tools, then calls the first with a valid argument object (see
:mod:`releaselib.verify.actions`). A plugin's probes are sent as declared (method, path, body,
expected status), in order, after ``/health``; a plugin probe of ``/reset`` or ``/step`` replaces
the probe's own.

FAIL rests only on the env's own HTTP answer: a 5xx or other error status, a body that is not an
observation, or an observation carrying the env's own error. An error that reports a need the
env's plugin declares is INCONCLUSIVE naming it. Everything on our side of the wire, and every
answer from what stands in front of the env, is INCONCLUSIVE with ``our_error`` set and a remedy
(see :mod:`releaselib.verify.http_session`); so is a 422 naming the body we sent.

OpenEnv's HTTP ``/reset`` and ``/step`` are stateless (each request builds a fresh env), so an env
that needs a reset before a step answers a bare ``POST /step`` with an error. When the HTTP episode
FAILs at ``/reset`` or ``/step``, the same episode is tried over ``WS /ws`` (see
:mod:`releaselib.verify.ws_episode`); only a whole episode of usable data there turns the FAIL
into a PASS, and in every other case the HTTP verdict stands, its reason adding what ``/ws`` said.
"""

from __future__ import annotations

import dataclasses
import json
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from releaselib.records import Probe
from releaselib.verify.actions import LIST_TOOLS, call_tool_body, is_tool_calling, step_body_for
from releaselib.verify.exchange import Exchange
from releaselib.verify.http_session import Answer, Session
from releaselib.verify.outcome import Outcome as Outcome  # re-exported: the verdict's type
from releaselib.verify.outcome import Stop
from releaselib.verify.usable import (
    error_in,
    is_observation,
    needs_named,
    refuses_action,
    rejects_arguments,
)
from releaselib.verify.ws_episode import (
    ERROR_OBSERVATION,
    NOT_THE_ENV,
    REJECTED_STEP,
    Socket,
    ws_episode,
)

#: How often the first ``GET /health`` is sent before our own time-out is the verdict: a server
#: may open its port before its workers can answer (dipg_safety's gunicorn starts 4 of them).
HEALTH_TRIES = 3
#: The paths whose answers must be usable observations.
EPISODE = ("/reset", "/step")
#: What a FAIL on a ``/step`` body derived from ``/schema`` adds: the env may refuse our body.
DERIVED_STEP = (
    "the /step body was derived from /schema: if the env refuses it, give the env's plugin a "
    "step probe (docs/adding-a-plugin.md §4)"
)


@dataclass(frozen=True)
class ProbeResult:
    """The outcome, why, every request made on the way, and the declared needs the env
    reported missing (they made it INCONCLUSIVE)."""

    outcome: Outcome
    reason: str
    transcript: tuple[Exchange, ...]
    our_error: bool = False
    needs: tuple[str, ...] = ()

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

        bodies = tuple(
            dataclasses.replace(e, body=clean(e.body), sent=clean(e.sent)) for e in self.transcript
        )
        return dataclasses.replace(self, reason=clean(self.reason), transcript=bodies)

    def render(self) -> str:
        """The verdict line followed by the transcript, one request a line."""
        lines = [f"{self.outcome.value}: {self.reason}"]
        return "\n".join(lines + [f"  {exchange}" for exchange in self.transcript])


def probe_base_url(
    url: str,
    *,
    timeout: float,
    probes: Sequence[Probe] = (),
    needs: Sequence[str] = (),
    headers: Mapping[str, str] | None = None,
    transport: httpx.BaseTransport | None = None,
    verify: ssl.SSLContext | bool = True,
) -> ProbeResult:
    """Probe the env server at ``url``; ``timeout`` applies to each request.

    ``probes``: the env's plugin probes, sent in order. ``needs``: what its plugin declares it
    needs (an error naming one is INCONCLUSIVE). ``verify`` is the TLS context for https URLs.
    With a ``transport`` (an in-process server) there is no socket, so ``/ws`` is not tried.
    """
    socket = None if transport else Socket.of(url, headers or {}, verify, timeout)
    with httpx.Client(
        base_url=url,
        timeout=timeout,
        headers=dict(headers or {}),
        transport=transport,
        verify=verify,
    ) as client:
        session = Session(client, socket)
        episode = _Episode(session, tuple(probes), tuple(needs))
        try:
            reason = episode.run()
        except Stop as stop:
            transcript = tuple(session.transcript)
            stop = episode.judged(stop)
            result = ProbeResult(stop.outcome, stop.reason, transcript, stop.our_error, stop.needs)
            return result.redacted()
    return ProbeResult(Outcome.PASS, reason, tuple(session.transcript)).redacted()


class _Episode:
    """One probe: health, reset, the plugin's requests, step; then /ws when HTTP FAILed."""

    def __init__(self, session: Session, probes: tuple[Probe, ...], needs: tuple[str, ...]):
        self.session, self.probes, self.needs = session, probes, needs
        self.step: dict[str, Any] | None = None  # the last step body sent
        self.derived = False  # that body was derived from /schema, not a plugin's probe
        self.tool_calling = False  # the schema is CallToolAction: /ws lists, then calls

    def run(self) -> str:
        health = self.session.send("GET", "/health", tries=HEALTH_TRIES)
        if health.status != 200:
            raise Stop(Outcome.FAIL, f"GET /health answered {health.status}")
        paths = {probe.path for probe in self.probes}
        try:
            if "/reset" not in paths:
                self._expect("POST /reset", self.session.send("POST", "/reset", {}), {})
            for probe in self.probes:
                self._send(probe)
            if "/step" not in paths:
                self.step, self.derived = self._step_body(), True
                self._expect("POST /step", self.session.send("POST", "/step", self.step), self.step)
        except Stop as stop:
            if not stop.episode or self.session.socket is None:
                raise
            return self._over_ws(self.session.socket, stop)
        return "reset and step answered usable observations"

    def judged(self, stop: Stop) -> Stop:
        """``stop``, for a ``/step`` body derived from ``/schema``: a FAIL on its answer says what
        to do when the env refuses that body; an error observation answering it (the env
        handled our guess at an action and said no) is our request's, INCONCLUSIVE, unless it
        is a crash no action excuses (:func:`refuses_action`), the ``/ws`` reset failed too,
        or the env calls tools (their errors are read by :func:`rejects_arguments`)."""
        if stop.outcome is not Outcome.FAIL or not self.derived:
            return stop
        if not stop.reason.startswith("POST /step"):
            return stop
        said = f"{stop.reason}; {DERIVED_STEP}"
        refused = (
            stop.reason.startswith(f"POST /step answered {ERROR_OBSERVATION}")
            and refuses_action(stop.reason)
            and "over /ws reset" not in stop.reason
        )
        if refused and not self.tool_calling:
            return Stop(Outcome.INCONCLUSIVE, f"probe error: {said}", our_error=True)
        return Stop(stop.outcome, said, our_error=stop.our_error, needs=stop.needs)

    def _send(self, probe: Probe) -> None:
        body = dict(probe.body) if probe.body is not None else None
        what = f"{probe.method} {probe.path}"
        answer = self.session.send(probe.method, probe.path, body)
        if probe.path in EPISODE:
            self._expect(what, answer, body or {})
            if probe.path == "/step":
                self.step = body
        elif answer.status != probe.expect_status:
            raise Stop(
                Outcome.FAIL,
                f"{what} answered {answer.status}; the plugin's probe {probe.name!r} "
                f"expects {probe.expect_status}",
            )

    def _expect(self, what: str, answer: Answer, sent: Mapping[str, Any]) -> None:
        """Stop unless ``answer`` is a usable observation."""
        locations = _error_locations(answer.data, sent) if answer.status == 422 else None
        if locations is not None:
            raise Stop(
                Outcome.INCONCLUSIVE,
                f"probe error: {what} rejected our body {json.dumps(sent)} "
                f"({locations}); fix the probe (a plugin step body), not the env",
                our_error=True,
            )
        if not 200 <= answer.status < 300:
            raise Stop(Outcome.FAIL, f"{what} answered {answer.status}", episode=True)
        if not is_observation(answer.data):
            raise Stop(
                Outcome.FAIL,
                f"{what} answered {answer.status} without an observation",
                episode=True,
            )
        error = error_in(answer.data, first_reset=what.endswith("/reset"))
        if error is None:
            return
        arguments = _tool_arguments(sent)
        if arguments is not None and rejects_arguments(error, arguments):
            raise Stop(
                Outcome.INCONCLUSIVE,
                f"probe error: {what} rejected our tool arguments {json.dumps(arguments)} "
                f"({error}); fix the probe: give the env's plugin a step probe",
                our_error=True,
            )
        whole = error_in(answer.data, first_reset=what.endswith("/reset"), whole=True)
        raise self._error(f"{what} answered {ERROR_OBSERVATION}{error}", whole or error)

    def _error(self, said: str, error: str) -> Stop:
        """FAIL for the env's own error; INCONCLUSIVE naming the declared needs it reports."""
        named = needs_named(error, self.needs)
        if not named:
            return Stop(Outcome.FAIL, said, episode=True)
        need = ", ".join(named)
        reason = f"needs {need} (give the Space what it needs, then verify again): {said}"
        return Stop(Outcome.INCONCLUSIVE, reason, episode=True, needs=named)

    def _planned_step(self) -> dict[str, Any] | None:
        """The body of the plugin's ``/step`` probe, if it has one."""
        body = next((p.body for p in self.probes if p.path == "/step"), None)
        return dict(body) if body is not None else None

    def _step_body(self) -> dict[str, Any]:
        """The schema's minimal action; for a tool-calling env, a call of a listed tool."""
        schema = self.session.send("GET", "/schema")
        if schema.status != 200:
            raise Stop(Outcome.FAIL, f"GET /schema answered {schema.status}")
        action = schema.data.get("action") if isinstance(schema.data, dict) else None
        if not isinstance(action, dict):
            raise Stop(Outcome.FAIL, "GET /schema has no action schema")
        if not is_tool_calling(action):
            return step_body_for(action)
        self.tool_calling = True
        listed = self.session.send("POST", "/step", LIST_TOOLS)
        self._expect("POST /step list_tools", listed, LIST_TOOLS)
        observation = listed.data["observation"]
        tools = observation.get("tools") if isinstance(observation, dict) else None
        body = call_tool_body(tools if isinstance(tools, list) else ())
        if body is None:
            raise Stop(Outcome.FAIL, "POST /step list_tools answered no tool to call", episode=True)
        return body

    def _over_ws(self, socket: Socket, http: Stop) -> str:
        """The PASS reason when the whole episode passes over ``/ws``; else the HTTP verdict
        ``http`` again, its reason adding what ``/ws`` said."""
        try:
            step = self.step or self._planned_step() or self._step_body()
        except Stop as schema:
            if not self.tool_calling:  # else /ws lists the tools itself
                reason = f"{http.reason}; /ws not tried: {schema.reason}"
                raise Stop(http.outcome, reason, needs=http.needs) from None
            step = {"action": None}
        action = step.get("action")
        reset = next((p.body for p in self.probes if p.path == "/reset"), None)
        said = ws_episode(socket, action, self.session.transcript, reset)
        if said is None:
            return (
                "reset and step answered usable observations over /ws "
                f"(HTTP {http.reason}; OpenEnv's HTTP API is stateless)"
            )
        if said.startswith(NOT_THE_ENV):
            raise Stop(
                Outcome.INCONCLUSIVE,
                f"{http.reason}; over /ws {said}, so the episode an env behind a stateless HTTP "
                "API needs was not tried; check HF_TOKEN and the network, then verify again",
                our_error=True,
            )
        if said.startswith(REJECTED_STEP):
            raise Stop(
                Outcome.INCONCLUSIVE,
                f"probe error: {http.reason}; over /ws reset answered an observation but {said} "
                f"(our body {json.dumps(action)}); fix the probe (a plugin step body), not the env",
                our_error=True,
            )
        raise Stop(http.outcome, f"{http.reason}; over /ws {said}", needs=http.needs)


def _tool_arguments(sent: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The arguments of a ``call_tool`` step body we sent; None for any other body."""
    action = sent.get("action")
    if isinstance(action, Mapping) and action.get("type") == "call_tool":
        arguments = action.get("arguments")
        return arguments if isinstance(arguments, Mapping) else {}
    return None


def _error_locations(data: Any, sent: Mapping[str, Any]) -> str | None:
    """Where a 422's validation errors point into our body, e.g. ``at body.action, message``:
    a ``loc`` starting ``body`` (FastAPI), or naming a field we sent, at the top of the body or
    of its action (openenv-core validates the action itself: ``["counter"]``), or a field we
    left out (``missing``, one level deep). None when none
    does, e.g. ``["settings", "DATABASE_URL"]``: then it is the env's answer, not ours."""
    details = data.get("detail") if isinstance(data, dict) else None
    if not isinstance(details, list):
        return None
    action = sent.get("action")
    ours = {"body", *sent, *(action if isinstance(action, Mapping) else ())}
    locations = [
        ".".join(str(part) for part in item["loc"])
        for item in details
        if isinstance(item, dict)
        and isinstance(item.get("loc"), list)
        and item["loc"]
        and (item["loc"][0] in ours or (item.get("type") == "missing" and len(item["loc"]) == 1))
    ]
    return "at " + ", ".join(locations) if locations else None
