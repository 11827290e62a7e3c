"""The ``WS /ws`` episode behind a stateless HTTP API, against real openenv-core servers on the
embedded Hub's Space domains."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from huggingface_hub import HfApi
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from releaselib.hub.client import Hub
from releaselib.hub.retry import RetryPolicy
from releaselib.hub.runtime import settle
from releaselib.localhub import LocalHub
from releaselib.records import Probe
from releaselib.verify.probe import Outcome, ProbeResult, probe_base_url
from tests.helpers import waits

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "envs"
#: env -> the body of its step: real repl_env answers a bare HTTP step this way.
STEPS = {
    "needs_reset_env": (
        "if not self._ready:\n"
        "            raise RuntimeError('Environment not initialized. Call reset() first.')\n"
        "        return EchoObservation(echoed=action.message, reward=1.0, done=False)"
    ),
    "step_raises_env": "raise RuntimeError('step is broken')",
    "http_disabled_env": "return EchoObservation(echoed=action.message, reward=1.0, done=False)",
    "needs_scenario_env": "return EchoObservation(echoed=action.message, reward=1.0, done=False)",
}
#: Real agent_world_model_env answers a reset without a scenario with an error observation.
NEEDS_SCENARIO = (
    "        self._ready = True\n",
    "        if not kwargs.get('scenario'):\n"
    "            return EchoObservation(echoed=\"Error: Parameter 'scenario' is required\", done=False)\n"
    "        self._ready = True\n",
)
#: Real agent_world_model_env answers HTTP reset and step with 400: "Use WebSocket endpoint".
HTTP_DISABLED_APP = """\
from fastapi.responses import JSONResponse
from models import EchoAction, EchoObservation
from openenv.core.env_server import create_app
from server.echo_environment import EchoEnvironment

app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo_env")
app.routes[:] = [r for r in app.routes if getattr(r, "path", None) not in ("/reset", "/step")]


@app.post("/reset")
async def reset_not_supported():
    return JSONResponse(status_code=400, content={"error": "Use WebSocket endpoint instead"})


@app.post("/step")
async def step_not_supported():
    return JSONResponse(status_code=400, content={"error": "Use WebSocket endpoint instead"})
"""
ENVIRONMENT = """\
from models import EchoAction, EchoObservation
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import State


class EchoEnvironment(Environment):
    def __init__(self) -> None:
        self._ready = False

    def reset(self, seed=None, episode_id=None, **kwargs):
        self._ready = True
        return EchoObservation(echoed="", reward=0.0, done=False)

    def step(self, action, timeout_s=None, **kwargs):
        {step}

    @property
    def state(self):
        return State(episode_id="x", step_count=0)
"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalHub]:
    """One Hub with a private Space per env in STEPS, each a copy of the echo example."""
    root = tmp_path_factory.mktemp("probe_ws")
    with LocalHub(root / "hub") as running:
        api = HfApi(endpoint=running.endpoint, token=running.token)
        for env, step in STEPS.items():
            tree = root / env
            shutil.copytree(
                EXAMPLES / "echo_env", tree, ignore=shutil.ignore_patterns("__pycache__")
            )
            shutil.copyfile(tree / "server" / "Dockerfile", tree / "Dockerfile")
            source = ENVIRONMENT.format(step=step)
            if env == "needs_scenario_env":
                source = source.replace(*NEEDS_SCENARIO)
            (tree / "server" / "echo_environment.py").write_text(source)
            if env in ("http_disabled_env", "needs_scenario_env"):
                (tree / "server" / "app.py").write_text(HTTP_DISABLED_APP)
            api.create_repo(f"openenv/{env}", repo_type="space", space_sdk="docker", private=True)
            api.upload_folder(folder_path=tree, repo_id=f"openenv/{env}", repo_type="space")
        yield running


def tls(hub: LocalHub) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(hub.ca_bundle))


def domain(hub: LocalHub, env: str) -> str:
    connected = Hub.connect(
        hub.endpoint, token=hub.token, policy=RetryPolicy(attempts=4, base=0.01, cap=0.05)
    )
    state = settle(connected, f"openenv/{env}", wait=waits(120), interval=0.2)
    assert state.stage == "RUNNING" and state.domains, f"{env}: {state.stage}: {state.error}"
    return state.domains[0].name


def probe(
    hub: LocalHub, env: str, step_body: dict | None = None, reset_body: dict | None = None
) -> ProbeResult:
    headers = {"Authorization": f"Bearer {hub.token}"}
    probes = () if reset_body is None else (Probe("reset", "POST", "/reset", reset_body),)
    if step_body is not None:
        probes += (Probe("step", "POST", "/step", step_body),)
    return probe_base_url(
        f"https://{domain(hub, env)}",
        timeout=waits(30),
        headers=headers,
        verify=tls(hub),
        probes=probes,
    )


def test_an_env_that_serves_episodes_only_over_ws_passes_and_a_refused_body_is_ours(
    hub: LocalHub,
) -> None:
    result = probe(hub, "http_disabled_env", {"action": {"message": "hi"}})
    assert result.outcome is Outcome.PASS, result.render()
    assert "POST /reset answered 400" in result.reason and "over /ws" in result.reason
    refused = probe(hub, "http_disabled_env", {"action": {"bogus": 1}})
    assert refused.outcome is Outcome.INCONCLUSIVE and refused.our_error, refused.render()
    assert refused.reason.startswith("probe error: POST /reset answered 400; over /ws reset")
    assert "VALIDATION_ERROR" in refused.reason and "a plugin step body" in refused.reason


def test_a_plugins_reset_body_is_the_reset_over_ws_too(hub: LocalHub) -> None:
    """As agent_world_model_env: HTTP reset and step answer 400, and a reset needs a scenario."""
    bare = probe(hub, "needs_scenario_env", {"action": {"message": "hi"}})
    assert bare.outcome is Outcome.FAIL, bare.render()
    assert "over /ws reset answered" in bare.reason and "scenario" in bare.reason
    given = probe(hub, "needs_scenario_env", {"action": {"message": "hi"}}, {"scenario": "s1"})
    assert given.outcome is Outcome.PASS, given.render()
    ws_reset = next(e for e in given.transcript if (e.method, e.path) == ("WS", "reset"))
    assert json.loads(ws_reset.sent)["data"] == {"scenario": "s1"}


def test_an_env_that_steps_only_after_its_reset_passes_over_ws(hub: LocalHub) -> None:
    result = probe(hub, "needs_reset_env")
    assert result.outcome is Outcome.PASS and not result.our_error, result.render()
    assert "over /ws" in result.reason and "POST /step answered 500" in result.reason
    requests = [(e.method, e.path, e.status) for e in result.transcript]
    hung = ("WS", "/ws", None)  # a handshake that hung under load, tried once more
    assert requests.count(hung) <= 1
    assert [r for r in requests if r != hung] == [
        ("GET", "/health", 200),
        ("POST", "/reset", 200),
        ("GET", "/schema", 200),
        ("POST", "/step", 500),
        ("WS", "/ws", 101),
        ("WS", "reset", 101),
        ("WS", "step", 101),
    ]
    step = json.loads(result.transcript[-1].body)
    assert step["type"] == "observation" and step["data"]["reward"] == 1.0


def test_an_env_whose_step_always_raises_still_fails_on_its_http_answer(hub: LocalHub) -> None:
    result = probe(hub, "step_raises_env")
    assert result.outcome is Outcome.FAIL and not result.our_error, result.render()
    assert result.reason.startswith("POST /step answered 500; over /ws step answered 'error'")
    assert [e.path for e in result.transcript][-3:] == ["/ws", "reset", "step"]


def test_a_private_spaces_ws_is_refused_without_the_token_as_its_http_is(hub: LocalHub) -> None:
    uri = f"wss://{domain(hub, 'needs_reset_env')}/ws"
    with pytest.raises(InvalidStatus) as refused:
        connect(uri, ssl=tls(hub), open_timeout=waits(30))
    assert refused.value.response.status_code == 404
    with connect(
        uri,
        ssl=tls(hub),
        open_timeout=waits(30),
        additional_headers={"Authorization": f"Bearer {hub.token}"},
    ) as ws:
        ws.send(json.dumps({"type": "reset", "data": {}}))
        assert json.loads(ws.recv(timeout=waits(30)))["type"] == "observation"
        ws.send(b"\x00binary")  # a binary frame crosses the proxy; the env answers it
        assert json.loads(ws.recv(timeout=waits(30)))["type"] == "error"


class NoWebSocket(BaseHTTPRequestHandler):
    """A server whose ``/ws`` handshake answers ``WS_STATUS``: health is fine, reset answers 500,
    everything else 404."""

    protocol_version = "HTTP/1.1"
    WS_STATUS = 404

    def do_GET(self) -> None:
        if self.path == "/ws" and self.WS_STATUS != 101:
            self.answer(self.WS_STATUS)
        elif self.path == "/ws":
            self.upgrade()
        else:
            self.answer(200 if self.path == "/health" else 404)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.answer(500)

    def answer(self, status: int) -> None:
        self.send_response(status)
        if 300 <= status < 400:
            self.send_header("Location", "https://login.example/")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def upgrade(self) -> None:
        """Accept the WebSocket and answer each message with an observation carrying nothing."""
        key = self.headers["Sec-WebSocket-Key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        accept = base64.b64encode(hashlib.sha1(key.encode()).digest()).decode()
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        for _ in range(2):
            head = self.rfile.read(2)
            if len(head) < 2:
                break
            length = head[1] & 0x7F
            extra = {126: 2, 127: 8}.get(length)
            length = int.from_bytes(self.rfile.read(extra), "big") if extra else length
            self.rfile.read(4 + length)  # the client's mask and payload
            payload = b'{"type": "observation"}'
            self.wfile.write(bytes([0x81, len(payload)]) + payload)
            self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


def probe_server(ws_status: int) -> ProbeResult:
    handler = type("Handler", (NoWebSocket,), {"WS_STATUS": ws_status})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        step = Probe("step", "POST", "/step", {"action": {"message": "hi"}})
        return probe_base_url(url, timeout=5, probes=(step,))
    finally:
        server.shutdown()
        server.server_close()


def test_a_ws_endpoint_that_is_not_there_leaves_the_http_verdict() -> None:
    result = probe_server(404)
    assert result.outcome is Outcome.FAIL and not result.our_error
    assert result.reason == "POST /reset answered 500; over /ws the handshake answered 404"
    assert (result.transcript[-1].method, result.transcript[-1].status) == ("WS", 404)


@pytest.mark.parametrize("status", [401, 403, 429, 302])
def test_a_front_door_on_the_ws_handshake_is_inconclusive_not_the_http_fail(status: int) -> None:
    """An env behind a stateless HTTP API answers /step 500 until /ws gives it its episode: when
    a rate limit, a login redirect or our token stops the handshake, there is no verdict."""
    result = probe_server(status)
    assert result.outcome is Outcome.INCONCLUSIVE and result.our_error, result.render()
    assert "over /ws (not the env) the handshake" in result.reason  # a 302 fails on its Location


def test_an_observation_message_without_an_observation_is_no_pass() -> None:
    result = probe_server(101)
    assert result.outcome is Outcome.FAIL, result.render()
    assert "reset answered 'observation' without an observation" in result.reason


def test_a_ws_handshake_that_never_ends_is_ours_and_tried_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """websockets' sync client can wait without a limit for its receiving thread when a
    handshake fails half-way; a handshake with no end in its own time-out is tried once more
    on a new connection, then is our INCONCLUSIVE."""
    from releaselib.verify import ws_episode as module

    release = threading.Event()
    connections = []

    def hangs(*args: object, **kwargs: object) -> None:
        connections.append(args)
        release.wait(60)  # as websockets' unbounded join of its receive thread did
        raise OSError("released")

    monkeypatch.setattr(module, "ws_connect", hangs)
    transcript: list = []
    socket = module.Socket("ws://127.0.0.1:9/ws", {}, True, 0.05)
    said = module.ws_episode(socket, {"message": "x"}, transcript)
    release.set()
    assert said is not None and said.startswith(module.NOT_THE_ENV)
    assert "the handshake had no end within our limit of 0.075 s, 2 times" in said
    assert len(connections) == 2
    assert [(e.path, e.status) for e in transcript] == [("/ws", None), ("/ws", None)]
