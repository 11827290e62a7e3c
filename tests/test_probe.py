"""The runtime probe against scripted servers (httpx.MockTransport) and real sockets: verdicts,\nwhose side of the wire a failure is on, and step bodies."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from releaselib.records import Probe
from releaselib.verify.actions import example_value, step_body_for
from releaselib.verify.probe import Outcome, ProbeResult, probe_base_url

ECHO_ACTION = {
    "additionalProperties": False,
    "properties": {"metadata": {"type": "object"}, "message": {"type": "string"}},
    "required": ["message"],
    "type": "object",
}


def server(
    **overrides: Callable[[httpx.Request], httpx.Response],
) -> tuple[httpx.MockTransport, list[Any]]:
    """A healthy env server; ``overrides`` replace the answer for a path like ``step``."""
    steps: list[Any] = []

    def answer(request: httpx.Request) -> httpx.Response:
        name = request.url.path.strip("/")
        if name in overrides:
            return overrides[name](request)
        if name == "health":
            return httpx.Response(200, json={"status": "healthy"})
        if name == "schema":
            return httpx.Response(200, json={"action": ECHO_ACTION, "observation": {}, "state": {}})
        if name == "step":
            steps.append(json.loads(request.content))
        return httpx.Response(200, json={"observation": {}, "reward": 0.0, "done": False})

    return httpx.MockTransport(answer), steps


def probe(transport: httpx.MockTransport, **kwargs: Any) -> ProbeResult:
    return probe_base_url("http://env.test", timeout=5, transport=transport, **kwargs)


def test_a_healthy_server_passes_with_a_schema_derived_step() -> None:
    transport, steps = server()
    result = probe(transport)
    assert result.outcome is Outcome.PASS and not result.our_error
    assert [(e.method, e.path, e.status) for e in result.transcript] == [
        ("GET", "/health", 200),
        ("POST", "/reset", 200),
        ("GET", "/schema", 200),
        ("POST", "/step", 200),
    ]
    assert steps == [{"action": {"message": ""}}]
    assert "PASS" in result.render() and "/step" in result.render()


def test_a_given_step_body_is_sent_and_the_schema_is_not_read() -> None:
    transport, steps = server()
    result = probe(transport, probes=(Probe("step", "POST", "/step", {"action": {"message": "hi"}}),))
    assert result.outcome is Outcome.PASS
    assert steps == [{"action": {"message": "hi"}}]
    assert "/schema" not in [e.path for e in result.transcript]


def test_health_alone_is_never_a_pass() -> None:
    transport, _ = server(reset=lambda r: httpx.Response(500, text="Internal Server Error"))
    result = probe(transport)
    assert result.outcome is Outcome.FAIL and "POST /reset answered 500" in result.reason
    assert result.transcript[-1].body == "Internal Server Error"


def test_a_reset_without_an_observation_fails() -> None:
    transport, _ = server(reset=lambda r: httpx.Response(200, json={"ok": True}))
    assert probe(transport).outcome is Outcome.FAIL


def test_a_422_on_our_step_body_is_our_error_not_the_envs() -> None:
    detail = {"detail": [{"type": "missing", "loc": ["body", "action"], "msg": "Field required"}]}
    transport, _ = server(step=lambda r: httpx.Response(422, json=detail))
    result = probe(transport)
    assert result.outcome is Outcome.INCONCLUSIVE and result.our_error
    assert result.reason.startswith("probe error") and "body.action" in result.reason


def test_a_timeout_is_inconclusive_and_ours_with_a_remedy() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    result = probe(server(reset=slow)[0])
    assert result.outcome is Outcome.INCONCLUSIVE and result.our_error
    assert "timed out" in result.reason and "--timeout" in result.reason
    assert result.transcript[-1].status is None


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def hangs_up() -> Iterator[int]:
    """A real TCP server that accepts each connection and closes it before any HTTP answer."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()
        thread.join(5)


def test_a_refused_connection_is_ours_not_the_envs() -> None:
    result = probe_base_url(f"http://127.0.0.1:{closed_port()}", timeout=5)
    assert result.outcome is Outcome.INCONCLUSIVE and result.our_error
    assert "refused before any HTTP answer" in result.reason
    assert result.transcript[-1].status is None


def test_a_connection_closed_before_any_answer_is_ours() -> None:
    with hangs_up() as port:
        result = probe_base_url(f"http://127.0.0.1:{port}", timeout=5)
    assert result.outcome is Outcome.INCONCLUSIVE and result.our_error
    assert "broke before any HTTP answer" in result.reason


def test_a_name_that_does_not_resolve_is_ours() -> None:
    result = probe_base_url("http://no-such-space.invalid", timeout=5)
    assert result.outcome is Outcome.INCONCLUSIVE and result.our_error
    assert "resolve" in result.reason and "DNS" in result.reason


def test_a_422_that_names_no_part_of_our_body_is_the_servers_answer() -> None:
    transport, _ = server(step=lambda r: httpx.Response(422, text="Unprocessable"))
    result = probe(transport)
    assert result.outcome is Outcome.FAIL and "POST /step answered 422" in result.reason


def test_a_4xx_on_a_schema_correct_step_fails_but_a_refused_token_is_ours() -> None:
    transport, _ = server(step=lambda r: httpx.Response(400, json={"detail": "bad action"}))
    assert probe(transport).outcome is Outcome.FAIL
    transport, _ = server(reset=lambda r: httpx.Response(401, json={"error": "token"}))
    refused = probe(transport)
    assert refused.outcome is Outcome.INCONCLUSIVE and refused.our_error
    assert "HF_TOKEN" in refused.reason


def test_bodies_are_trimmed_to_one_line() -> None:
    transport, _ = server(reset=lambda r: httpx.Response(500, text="x\n" * 1000))
    body = probe(transport).transcript[-1].body
    assert len(body.encode()) <= 500 and "\n" not in body  # the first 500 bytes


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "integer", "minimum": 1}, 1),
        ({"type": "number", "exclusiveMinimum": 0}, 1.0),
        ({"type": "string", "minLength": 2}, "aa"),
        ({"enum": ["left", "right"]}, "left"),
        ({"const": "call_tool"}, "call_tool"),
        ({"type": "integer", "default": 7}, 7),
        ({"anyOf": [{"type": "null"}, {"type": "boolean"}]}, False),
        ({"type": ["null", "array"], "items": {"type": "integer"}, "minItems": 2}, [0, 0]),
        ({"$ref": "#/$defs/Move"}, "up"),
        (
            {"type": "object", "required": ["t"], "properties": {"t": {"$ref": "#/$defs/T"}}},
            {"t": {"x": 0}},
        ),
    ],
)
def test_example_values_are_minimal_and_valid(schema: dict[str, Any], expected: Any) -> None:
    defs = {
        "Move": {"enum": ["up", "down"]},
        "T": {
            "type": "object",
            "required": ["x"],
            "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        },
    }
    assert example_value(schema, defs) == expected


def test_step_body_wraps_the_action_and_reads_its_defs() -> None:
    action = {
        "$defs": {"Move": {"enum": ["left", "right"], "type": "string"}},
        "properties": {"move": {"$ref": "#/$defs/Move"}, "note": {"type": "string"}},
        "required": ["move"],
        "type": "object",
    }
    assert step_body_for(action) == {"action": {"move": "left"}}


def test_plugin_probes_go_in_order_a_reset_probe_replaces_ours_and_a_status_is_checked() -> None:
    transport, steps = server(tasks=lambda r: httpx.Response(404, json={"detail": "Not Found"}))
    reset = Probe("reset", "POST", "/reset", {"seed": 7})
    tasks = Probe("tasks", "GET", "/tasks")
    step = Probe("step", "POST", "/step", {"action": {"message": "hi"}})
    passed = probe(transport, probes=(reset, step))
    assert [(f"{e.method} {e.path}", e.sent) for e in passed.transcript] == [
        ("GET /health", ""),
        ("POST /reset", '{"seed":7}'),
        ("POST /step", '{"action":{"message":"hi"}}'),
    ]
    failed = probe(transport, probes=(reset, tasks, step))
    assert failed.outcome is Outcome.FAIL
    assert failed.reason == "GET /tasks answered 404; the plugin's probe 'tasks' expects 200"
    assert steps == [{"action": {"message": "hi"}}]  # the failed probe stopped before its step


def test_a_union_with_call_tool_is_a_tool_calling_schema() -> None:
    from releaselib.verify.actions import is_tool_calling

    call = {"properties": {"type": {"const": "call_tool"}, "tool_name": {}, "arguments": {}}}
    listing = {"properties": {"type": {"const": "list_tools"}}}
    union = {"anyOf": [{"$ref": "#/$defs/L"}, {"$ref": "#/$defs/C"}], "$defs": {"L": listing, "C": call}}
    assert is_tool_calling(call) and is_tool_calling(union)
    assert not is_tool_calling(listing) and not is_tool_calling(ECHO_ACTION)
