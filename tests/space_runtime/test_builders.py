"""The embedded Hub's builders, end to end: a Space commit is built (host or venv), then run."""

from __future__ import annotations

import importlib.util
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from huggingface_hub import HfApi, SpaceRuntime

from releaselib.hub.signatures import SIGNATURES
from releaselib.localhub import LocalHub
from releaselib.verify.probe import Outcome, probe_base_url
from tests.helpers import waits
from tests.space_runtime.spaces import examples_at_pin, git_on_gitless_space, openenv_space

pytestmark = pytest.mark.venv
DONE = {"RUNNING", "BUILD_ERROR", "RUNTIME_ERROR"}


@pytest.fixture(scope="module")
def venv_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalHub]:
    served = examples_at_pin(tmp_path_factory.mktemp("openenv") / "OpenEnv")
    with LocalHub(tmp_path_factory.mktemp("venv-hub"), builder="venv", openenv=served) as hub:
        yield hub


@pytest.fixture(scope="module")
def host_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalHub]:
    with LocalHub(tmp_path_factory.mktemp("host-hub"), builder="host") as hub:
        yield hub


def deploy(hub: LocalHub, tree: Path, name: str) -> SpaceRuntime:
    """Commit ``tree`` as the Space openenv/<name> and wait until it runs or fails."""
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    repo_id = f"openenv/{name}"
    api.create_repo(repo_id, repo_type="space", space_sdk="docker", exist_ok=True)
    api.upload_folder(repo_id=repo_id, repo_type="space", folder_path=tree)
    deadline = time.monotonic() + waits(600)
    while (runtime := api.get_space_runtime(repo_id)).stage not in DONE:
        assert time.monotonic() < deadline, f"{repo_id} still {runtime.stage}"
        time.sleep(0.2)
    return runtime


def probe(hub: LocalHub, runtime: SpaceRuntime) -> Outcome:
    url = f"https://{runtime.raw['domains'][0]['domain']}"
    tls = ssl.create_default_context(cafile=str(hub.ca_bundle))
    auth = {"authorization": f"Bearer {hub.token}"}
    return probe_base_url(url, timeout=waits(30), verify=tls, headers=auth).outcome


def test_a_package_the_tool_lacks_passes_under_venv_and_fails_under_host(
    venv_hub: LocalHub, host_hub: LocalHub, tmp_path: Path
) -> None:
    assert importlib.util.find_spec("inflection") is None  # the tool's own environment lacks it
    tree = openenv_space(
        tmp_path / "s", "inflect_env", imports="inflection", declares=["inflection"]
    )
    built = deploy(venv_hub, tree, "inflect_env")
    assert built.stage == "RUNNING", built.raw.get("errorMessage")
    assert probe(venv_hub, built) is Outcome.PASS
    hosted = deploy(host_hub, tree, "inflect_env")
    assert hosted.stage == "RUNTIME_ERROR"
    assert "No module named 'inflection'" in hosted.raw["errorMessage"]


def test_an_import_missing_from_the_declared_dependencies_is_a_runtime_error_under_venv(
    venv_hub: LocalHub, tmp_path: Path
) -> None:
    assert importlib.util.find_spec("humanize") is not None  # the host would hide the mistake
    tree = openenv_space(tmp_path / "s", "undeclared_env", imports="humanize", declares=[])
    runtime = deploy(venv_hub, tree, "undeclared_env")
    assert runtime.stage == "RUNTIME_ERROR"
    assert "ModuleNotFoundError: No module named 'humanize'" in runtime.raw["errorMessage"]


def test_a_git_requirement_on_a_gitless_image_is_a_build_error_recover_can_name(
    venv_hub: LocalHub, tmp_path: Path
) -> None:
    runtime = deploy(venv_hub, git_on_gitless_space(tmp_path / "s"), "gitless_env")
    assert runtime.stage == "BUILD_ERROR"
    message = runtime.raw["errorMessage"]
    assert "Cannot find command 'git'" in message
    assert [s.name for s in SIGNATURES if s.search(message)] == ["git-missing"]
    api = HfApi(endpoint=venv_hub.endpoint, token=venv_hub.token)
    log = "".join(api.fetch_space_logs("openenv/gitless_env", build=True))
    assert "Cannot find command 'git'" in log and "line 3: pip install" in log


def test_a_hanging_build_holds_up_no_other_space_and_ends_as_a_build_error(tmp_path: Path) -> None:
    with (
        socket.socket() as black_hole,
        LocalHub(tmp_path / "hub", builder="venv", build_timeout=waits(8), build_jobs=2) as hub,
    ):
        black_hole.bind(("127.0.0.1", 0))
        black_hole.listen()  # accepts connections, never answers
        index = f"http://127.0.0.1:{black_hole.getsockname()[1]}/simple"
        hanging = tmp_path / "hanging"
        hanging.mkdir()
        (hanging / "Dockerfile").write_text(
            f"FROM python:3.11\nRUN pip install --index-url {index} inflection\n"
            'CMD ["python", "-m", "http.server", "8000"]\n'
        )
        quick = tmp_path / "quick"
        quick.mkdir()
        (quick / "Dockerfile").write_text(
            'FROM python:3.11\nCMD ["sh", "-c", "python -m http.server --bind 127.0.0.1 $PORT"]\n'
        )
        api = HfApi(endpoint=hub.endpoint, token=hub.token)
        api.create_repo("openenv/hanging", repo_type="space", space_sdk="docker")
        api.upload_folder(repo_id="openenv/hanging", repo_type="space", folder_path=hanging)
        assert deploy(hub, quick, "quick").stage == "RUNNING"
        assert api.get_space_runtime("openenv/hanging").stage == "BUILDING"
        ended = deploy(hub, hanging, "hanging")
        assert ended.stage == "BUILD_ERROR" and f"took longer than {waits(8):g} s" in ended.raw["errorMessage"]


def test_a_build_queued_behind_another_loses_none_of_its_wait(tmp_path: Path) -> None:
    """One build slot, a build that hangs until its time-out, and a quick Space queued behind
    it: the runtime says it is queued, and a watch whose wait is shorter than the queue still
    sees the quick Space run (its wait counts from when it left the queue)."""
    from releaselib.hub.client import Hub
    from releaselib.hub.runtime import watch

    with (
        socket.socket() as black_hole,
        LocalHub(tmp_path / "hub", builder="venv", build_timeout=waits(6), build_jobs=1) as hub,
    ):
        black_hole.bind(("127.0.0.1", 0))
        black_hole.listen()  # accepts connections, never answers
        index = f"http://127.0.0.1:{black_hole.getsockname()[1]}/simple"
        hanging, quick = tmp_path / "hanging", tmp_path / "quick"
        hanging.mkdir()
        (hanging / "Dockerfile").write_text(
            f'FROM python:3.11\nRUN pip install --index-url {index} inflection\nCMD ["python"]\n'
        )
        quick.mkdir()
        (quick / "Dockerfile").write_text(
            'FROM python:3.11\nCMD ["sh", "-c", "python -m http.server --bind 127.0.0.1 $PORT"]\n'
        )
        api = HfApi(endpoint=hub.endpoint, token=hub.token)
        for name, tree in (("hanging", hanging), ("quick", quick)):
            api.create_repo(f"openenv/{name}", repo_type="space", space_sdk="docker")
            api.upload_folder(repo_id=f"openenv/{name}", repo_type="space", folder_path=tree)
            if name == "hanging":
                deadline = time.monotonic() + waits(30)
                while "--> line 2" not in _build_log(hub, name) and time.monotonic() < deadline:
                    time.sleep(0.05)  # it holds the one slot before the quick one is pushed
        assert api.get_space_runtime("openenv/quick").raw.get("localhubQueued") is True
        connected = Hub.connect(hub.endpoint, token=hub.token)
        polls = list(watch(connected, ["openenv/quick"], wait=waits(3), interval=0.1))
        final = polls[-1].states["openenv/quick"]
        assert final.stage == "RUNNING", final
        assert any(p.states["openenv/quick"].queued for p in polls) and polls[-1].elapsed > waits(3)
        assert api.get_space_runtime("openenv/hanging").stage == "BUILD_ERROR"


def _build_log(hub: LocalHub, name: str) -> str:
    log = hub.state_dir / "runtime" / "openenv" / name / "build.log"
    return log.read_text() if log.is_file() else ""
