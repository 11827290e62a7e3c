"""Scenarios: injected HTTP faults, misbehaving Spaces, and exact request counts."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from huggingface_hub import HfApi
from huggingface_hub.errors import HfHubHTTPError
from localhub_helpers import QUICK_APP, wait_for_stage, write_tree

from releaselib.errors import UsageError
from releaselib.localhub import Fault, LocalHub, Scenario, SpaceBehaviour
from releaselib.localhub.scenario import FaultInjector
from tests.helpers import waits

MakeHub = Callable[..., LocalHub]


def _statuses(hub: LocalHub, endpoint: str) -> list[int | None]:
    return [r.status for r in hub.requests() if r.endpoint == endpoint]


def test_429_with_retry_after_is_retried_by_the_client(
    localhub_factory: MakeHub, tmp_path: Path
) -> None:
    hub = localhub_factory(
        Scenario(faults=(Fault(endpoint="preupload", status=429, retry_after=0, count=1),))
    )
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    api.create_repo("acme/app", repo_type="space", space_sdk="docker")
    folder = write_tree(tmp_path, {"a.txt": "a"})
    api.upload_folder(folder_path=folder, repo_id="acme/app", repo_type="space")
    assert _statuses(hub, "preupload") == [429, 200]
    assert hub.counters().commits == 1


def test_503_reaches_a_caller_that_does_not_retry(localhub_factory: MakeHub) -> None:
    hub = localhub_factory(Scenario(faults=(Fault(path="/api/whoami-v2", status=503, count=1),)))
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    with pytest.raises(HfHubHTTPError) as caught:
        api.whoami()
    assert caught.value.response.status_code == 503
    assert api.whoami()["name"] == "openenv"
    assert _statuses(hub, "whoami") == [503, 200]


def test_dropped_connection_is_retried_by_paginated_calls(localhub_factory: MakeHub) -> None:
    hub = localhub_factory(Scenario(faults=(Fault(endpoint="list_repos", drop=True, count=1),)))
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    api.create_repo("acme/app", repo_type="space", space_sdk="docker")
    assert [s.id for s in api.list_spaces(author="acme")] == ["acme/app"]
    assert _statuses(hub, "list_repos") == [None, 200]
    assert hub.counters().by_status == {"200": 2, "dropped": 1}


def test_a_fault_can_answer_an_html_body(localhub_factory: MakeHub) -> None:
    page = "<html><body>Bad gateway</body></html>"
    hub = localhub_factory(
        Scenario(faults=(Fault(endpoint="whoami", body=page, content_type="text/html", count=1),))
    )
    answer = httpx.get(f"{hub.endpoint}/api/whoami-v2", headers={"authorization": f"Bearer {hub.token}"})
    assert (answer.status_code, answer.text) == (200, page)
    assert answer.headers["content-type"].startswith("text/html")
    assert HfApi(endpoint=hub.endpoint, token=hub.token).whoami()["name"] == "openenv"
    html_502 = Scenario.from_dict({"faults": [{"endpoint": "whoami", "status": 502, "body": page}]})
    assert html_502.faults == (Fault(endpoint="whoami", status=502, body=page),)


def test_slow_answers(localhub_factory: MakeHub) -> None:
    hub = localhub_factory(Scenario(faults=(Fault(endpoint="whoami", delay=0.5),)))
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    started = time.monotonic()
    api.whoami()
    assert time.monotonic() - started >= 0.5


def test_fraction_faults_every_nth_request(localhub_factory: MakeHub) -> None:
    hub = localhub_factory(
        Scenario(faults=(Fault(method="GET", endpoint="space_runtime", status=500, fraction=0.5),))
    )
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    api.create_repo("acme/app", repo_type="space", space_sdk="docker")
    for _ in range(4):
        try:
            api.get_space_runtime("acme/app")
        except HfHubHTTPError as error:
            assert error.response.status_code == 500
    assert _statuses(hub, "space_runtime") == [200, 500, 200, 500]


def test_faults_injected_for_a_while_hand_back_the_scenarios_with_their_counts() -> None:
    """``LocalHub.faults`` swaps faults in and back: a scenario fault limited to two requests
    that has had one keeps its count of one, not a fresh two."""
    once_more = Fault(path="/reset", status=500, count=2)
    injector = FaultInjector((once_more,))
    assert injector.decide("POST", "/reset", None) is once_more
    before, seen = injector.swap((Fault(path="/step", status=503),))
    assert injector.decide("POST", "/reset", None) is None
    injector.swap(before, seen)
    assert [injector.decide("POST", "/reset", None) for _ in range(2)] == [once_more, None]


def test_request_bytes_are_counted_exactly(localhub: LocalHub) -> None:
    body = b'{"content": "---\\ntitle: x\\n---\\n", "repoType": "space"}'
    answer = httpx.post(f"{localhub.endpoint}/api/validate-yaml", content=body, trust_env=False)
    assert answer.json() == {"errors": [], "warnings": []}
    counters = localhub.counters()
    assert (counters.requests, counters.request_bytes) == (1, len(body))
    assert counters.by_endpoint == {"validate_yaml": 1}


def test_scenario_files_load_and_reject_unknown_keys(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(
        "build_seconds: 0\n"
        "faults:\n  - {endpoint: commit, status: 500, count: 2}\n"
        "spaces:\n  - {repo: 'acme/*', first_domain_404: true, domains: 2}\n"
    )
    assert Scenario.load(path) == Scenario(
        faults=(Fault(endpoint="commit", status=500, count=2),),
        spaces=(SpaceBehaviour(repo="acme/*", first_domain_404=True, domains=2),),
        build_seconds=0,
    )
    path.write_text("faults:\n  - {endpoint: commit, stauts: 500}\n")
    with pytest.raises(UsageError, match="stauts"):
        Scenario.load(path)


# Spaces that misbehave, all on one Hub.
BEHAVIOURS = Scenario(
    spaces=(
        SpaceBehaviour(repo="acme/broken", build_error="pip install failed"),
        SpaceBehaviour(repo="acme/stale", stale_build_error="cached image is broken"),
        SpaceBehaviour(repo="acme/stuck", stuck_starting=True),
        SpaceBehaviour(repo="acme/two-domains", domains=2, first_domain_404=True),
        SpaceBehaviour(repo="acme/sleepy", sleeping=True),
    )
)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalHub]:
    with LocalHub(tmp_path_factory.mktemp("hub"), scenario=BEHAVIOURS) as running:
        yield running


@pytest.fixture(scope="module")
def deploy(hub: LocalHub, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], HfApi]:
    """Create a public Space with the quick app; returns the client."""
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    tree = write_tree(tmp_path_factory.mktemp("quick"), QUICK_APP)

    def deployed(repo_id: str) -> HfApi:
        api.create_repo(repo_id, repo_type="space", space_sdk="docker")
        api.upload_folder(folder_path=tree, repo_id=repo_id, repo_type="space")
        return api

    return deployed


def test_build_error(deploy: Callable[[str], HfApi]) -> None:
    api = deploy("acme/broken")
    runtime = wait_for_stage(api, "acme/broken", {"BUILD_ERROR", "RUNNING"})
    assert (runtime.stage, runtime.raw["errorMessage"]) == ("BUILD_ERROR", "pip install failed")
    api.restart_space("acme/broken", factory_reboot=True)
    assert wait_for_stage(api, "acme/broken", {"BUILD_ERROR", "RUNNING"}).stage == "BUILD_ERROR"


def test_stale_build_error_clears_on_factory_restart(deploy: Callable[[str], HfApi]) -> None:
    api = deploy("acme/stale")
    assert wait_for_stage(api, "acme/stale", {"BUILD_ERROR", "RUNNING"}).stage == "BUILD_ERROR"
    api.restart_space("acme/stale")
    assert wait_for_stage(api, "acme/stale", {"BUILD_ERROR", "RUNNING"}).stage == "BUILD_ERROR"
    api.restart_space("acme/stale", factory_reboot=True)
    assert wait_for_stage(api, "acme/stale", {"BUILD_ERROR", "RUNNING"}).stage == "RUNNING"


def test_stuck_in_app_starting(deploy: Callable[[str], HfApi]) -> None:
    api = deploy("acme/stuck")
    wait_for_stage(api, "acme/stuck", {"APP_STARTING"})
    time.sleep(1)
    assert api.get_space_runtime("acme/stuck").stage == "APP_STARTING"


def test_first_of_two_domains_answers_404(
    hub: LocalHub, deploy: Callable[[str], HfApi], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(hub.ca_bundle))
    api = deploy("acme/two-domains")
    runtime = wait_for_stage(api, "acme/two-domains", {"RUNNING"})
    first, second = (f"https://{d['domain']}/ping" for d in runtime.raw["domains"])
    assert httpx.get(first).status_code == 404
    assert httpx.get(second).json()["path"] == "/ping"


def test_sleeping_space_wakes_on_first_request(
    hub: LocalHub, deploy: Callable[[str], HfApi], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(hub.ca_bundle))
    api = deploy("acme/sleepy")
    runtime = wait_for_stage(api, "acme/sleepy", {"SLEEPING"})
    domain = runtime.raw["domains"][0]["domain"]
    assert httpx.get(f"https://{domain}/wake", timeout=waits(30)).json()["path"] == "/wake"
    assert api.get_space_runtime("acme/sleepy").stage == "RUNNING"
