"""A runtime that installed nothing is no evidence: under the embedded Hub's ``host`` builder an
import error is INCONCLUSIVE (a crash of the Space's own making still FAILs), and the embedded
Hub says what it is, so pin can refuse its verdicts (tests/test_release_decisions.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from releaselib.hub.client import Hub
from releaselib.hub.embedded import MARKER_HEADER, embedded_builder
from releaselib.hub.retry import RetryPolicy
from releaselib.localhub import LocalHub
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.verify.candidates import verify_spaces
from releaselib.verify.probe import Outcome
from tests.helpers import waits

PROJECT = Path(__file__).resolve().parents[1]
BROKEN = PROJECT / "examples" / "envs" / "broken_env"
SUFFIX = "-0.2.2"
#: env -> what its Space's command does: import a package nobody installed, or crash by itself
COMMANDS = {
    "missing_env": "import openenv_release_test_not_installed",
    "crash_env": "raise SystemExit('the env cannot find its dataset')",
}
#: real openenv-core servers that start, then fail in ``reset``: an import of a package nobody
#: installed (found only by the probe), or the env's own error (examples/broken_env as it is)
RESETS = {
    "lazy_env": "import openenv_release_test_not_installed  # noqa: F401",
    "broken_env": None,
}
ENVS = [*COMMANDS, *RESETS]


def openenv_tree(tree: Path, reset: str | None) -> Path:
    """examples/broken_env as a Space tree, its ``reset`` raising, or running ``reset``."""
    shutil.copytree(BROKEN, tree, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(tree / "server" / "Dockerfile", tree / "Dockerfile")
    if reset is not None:
        app = tree / "server" / "app.py"
        app.write_text(app.read_text().replace('raise RuntimeError("dataset missing: reset cannot build an episode")', reset))
    return tree


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalHub]:
    root = tmp_path_factory.mktemp("embedded")
    with LocalHub(root / "hub", builder="host") as running:
        api = Hub.connect(running.endpoint, token=running.token, policy=RetryPolicy(base=0.01, cap=0.05)).api
        for env, command in COMMANDS.items():
            tree = root / env
            tree.mkdir()
            (tree / "Dockerfile").write_text(f'FROM python:3.11-slim\nCMD ["python", "-c", {json.dumps(command)}]\n')
            space = f"openenv/{env}{SUFFIX}"
            api.create_repo(space, repo_type="space", space_sdk="docker", private=True)
            api.upload_folder(repo_id=space, folder_path=tree, repo_type="space")
        for env, reset in RESETS.items():
            space = f"openenv/{env}{SUFFIX}"
            api.create_repo(space, repo_type="space", space_sdk="docker", private=True)
            api.upload_folder(repo_id=space, folder_path=openenv_tree(root / env, reset), repo_type="space")
        yield running


def verify(hub: LocalHub) -> dict[str, tuple[Outcome, str]]:
    results = verify_spaces(
        Hub.connect(hub.endpoint, token=hub.token), [f"openenv/{env}{SUFFIX}" for env in ENVS], suffix=SUFFIX,
        registry=PluginRegistry(get_plugin_manager(entry_points=False)), timeout=waits(10), wait=waits(60), interval=0.2,
        tls=ssl.create_default_context(cafile=str(hub.ca_bundle)),
    )
    return {r.env: (r.outcome, r.reason) for r in results}


@pytest.fixture(scope="module")
def found(hub: LocalHub) -> dict[str, tuple[Outcome, str]]:
    """Every Space verified once: env -> (outcome, reason)."""
    return verify(hub)


def test_an_import_error_under_the_host_builder_is_inconclusive_and_a_crash_still_fails(found: dict[str, tuple[Outcome, str]]) -> None:
    outcome, reason = found["missing_env"]
    assert outcome is Outcome.INCONCLUSIVE, reason
    assert "ModuleNotFoundError" in reason and "the host builder installs nothing; use --builder venv" in reason
    outcome, reason = found["crash_env"]
    assert outcome is Outcome.FAIL and "the env cannot find its dataset" in reason


def test_a_module_missing_only_when_the_probe_resets_is_inconclusive_under_host_and_an_env_error_fails(found: dict[str, tuple[Outcome, str]]) -> None:
    """Issue 26: the server started, ``/reset`` answered 500 with the ModuleNotFoundError, and
    that was judged FAIL (and pinned)."""
    outcome, reason = found["lazy_env"]
    assert outcome is Outcome.INCONCLUSIVE, reason
    assert "No module named 'openenv_release_test_not_installed'" in reason
    assert reason.endswith("the host builder installs nothing; use --builder venv")
    outcome, reason = found["broken_env"]
    assert outcome is Outcome.FAIL and "dataset missing" in reason and "host builder" not in reason


def test_the_runtime_and_every_api_answer_name_the_builder(hub: LocalHub) -> None:
    runtime = httpx.get(f"{hub.endpoint}/api/spaces/openenv/crash_env{SUFFIX}/runtime", headers={"Authorization": f"Bearer {hub.token}"})
    assert runtime.json()["localhubBuilder"] == "host" and runtime.headers[MARKER_HEADER] == "host"
    assert httpx.get(f"{hub.endpoint}/api/whoami-v2").headers[MARKER_HEADER] == "host"  # a 401 too
    assert embedded_builder(Hub.connect(hub.endpoint, token=hub.token)) == "host"


def test_a_remote_hub_is_never_asked_whether_it_is_embedded() -> None:
    # no request leaves for a non-loopback endpoint (this machine cannot reach it anyway)
    assert embedded_builder(Hub.connect("https://huggingface.co", token="hf_" + "x" * 34)) is None


def test_serve_builds_with_venv_unless_told_otherwise(tmp_path: Path) -> None:
    serving = subprocess.Popen(
        [sys.executable, "-m", "releaselib.localhub", "--state-dir", str(tmp_path / "hub")],
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(PROJECT)},
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert serving.stdout is not None
        endpoint = json.loads(serving.stdout.readline())["endpoint"]
        assert httpx.get(f"{endpoint}/api/whoami-v2").headers[MARKER_HEADER] == "venv"
    finally:
        os.kill(serving.pid, signal.SIGTERM)
        serving.wait(60)
