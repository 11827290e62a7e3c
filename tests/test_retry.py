"""An unreachable Hub: two quick tries, then one error naming the endpoint (on stderr)."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx2
import pytest

from releaselib.errors import UnreachableError
from releaselib.hub.client import Hub
from releaselib.hub.retry import HubUnreachable, RetryingTransport, RetryPolicy
from tests.helpers import cli, user_env

PROJECT = Path(__file__).resolve().parents[1]


class Counting(httpx2.BaseTransport):
    """A real transport that counts the requests it is handed."""

    def __init__(self) -> None:
        self.inner = httpx2.HTTPTransport()
        self.calls = 0

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self.calls += 1
        return self.inner.handle_request(request)


@pytest.fixture
def closed_endpoint() -> str:
    """An http endpoint on a port nothing listens on: connections are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("host", ["closed", "http://openenv-release-test.invalid"])
def test_refused_and_unresolvable_hubs_get_two_quick_tries(host: str, closed_endpoint: str) -> None:
    pauses: list[float] = []
    inner = Counting()
    transport = RetryingTransport(RetryPolicy(sleep=pauses.append), inner)
    url = closed_endpoint if host == "closed" else host
    with pytest.raises(HubUnreachable) as raised:  # which huggingface_hub's backoff leaves alone
        transport.handle_request(httpx2.Request("GET", f"{url}/api/whoami-v2"))
    assert isinstance(raised.value.cause, httpx2.ConnectError)
    assert not isinstance(raised.value, (httpx2.NetworkError, httpx2.TimeoutException))
    assert inner.calls == 2
    assert pauses == [RetryPolicy().connect_pause] and pauses[0] < 1


def test_an_unreachable_hub_is_an_error_naming_the_endpoint(closed_endpoint: str) -> None:
    hub = Hub.connect(closed_endpoint, token="hf_" + "x" * 34, policy=RetryPolicy(sleep=lambda _: None))
    with pytest.raises(UnreachableError, match=f"cannot reach the Hub at {closed_endpoint} "):
        hub.space("openenv/echo_env-0.2.2")


def test_dry_run_against_an_unreachable_hub_fails_once_on_stderr(closed_endpoint: str, tmp_path: Path) -> None:
    result = cli(
        "deploy", "--dry-run", "--repo", str(PROJECT / "examples"), "--staging-dir", str(tmp_path / "s"),
        "--hub-endpoint", closed_endpoint, env=user_env(tmp_path),
    )
    assert result.returncode == 1
    assert "error" not in result.stdout and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"cannot reach the Hub at {closed_endpoint}" in errors[0], result.stderr


def test_a_hub_that_accepts_but_never_answers_gets_two_tries_not_a_hang() -> None:
    """A blackholed endpoint once hung deploy for ten minutes: a read timeout counts as
    unreachable, two tries, then the error names the endpoint."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        inner = Counting()
        policy = RetryPolicy(sleep=lambda _: None, read_timeout=0.3)
        transport = RetryingTransport(policy, inner)
        with pytest.raises(HubUnreachable) as raised:
            transport.handle_request(httpx2.Request("GET", f"{endpoint}/api/whoami-v2"))
        assert isinstance(raised.value.cause, httpx2.ReadTimeout)
        assert inner.calls == 2
        hub = Hub.connect(endpoint, token="hf_" + "x" * 34, policy=policy)
        with pytest.raises(UnreachableError, match=f"cannot reach the Hub at {endpoint} "):
            hub.space("openenv/echo_env-0.2.2")
