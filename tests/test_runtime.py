"""Waiting for terminal stages (one listing per author per cycle), triage, and signatures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from huggingface_hub import HfApi

from releaselib.errors import PluginError
from releaselib.hookspecs import hookimpl
from releaselib.hub.client import Hub, RemoteSpace
from releaselib.hub.retry import RetryPolicy
from releaselib.hub.runtime import Poll, SpaceState, common_suffix, diagnose, settle, watch
from releaselib.hub.signatures import SIGNATURES
from releaselib.localhub import LocalHub, Scenario, SpaceBehaviour
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.records import Signature
from tests.helpers import builtin_registry, waits

FAST = RetryPolicy(attempts=4, base=0.01, cap=0.05)
#: A Space that serves in well under a second: a stdlib HTTP server.
QUICK_APP = {
    "Dockerfile": (
        "FROM python:3.11-slim\nWORKDIR /app\nCOPY app.py /app/\n"
        'CMD ["python", "/app/app.py", "--host", "0.0.0.0", "--port", "7860"]\n'
    ),
    "app.py": (
        "import argparse\n"
        "from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--host')\n"
        "parser.add_argument('--port', type=int)\n"
        "args = parser.parse_args()\n"
        "ThreadingHTTPServer((args.host, args.port), BaseHTTPRequestHandler).serve_forever()\n"
    ),
}
SCENARIO = Scenario(
    spaces=(
        SpaceBehaviour(repo="*/broken-*", build_error="pip failed: no matching distribution"),
        SpaceBehaviour(repo="*/stuck-*", stuck_starting=True),
        SpaceBehaviour(repo="*/sleepy-*", sleeping=True),
    )
)
SHADOWING = (
    "  File \"/app/src/core/types.py\", line 1, in <module>\n"
    "ImportError: cannot import name 'GenericAlias' from partially initialized module 'types' "
    "(most likely due to a circular import) (/app/src/core/types.py)"
)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalHub]:
    with LocalHub(tmp_path_factory.mktemp("runtime"), scenario=SCENARIO) as running:
        yield running


def deploy_quick(hub: LocalHub, tmp: Path, *space_ids: str, gate: Path | None = None) -> None:
    """Deploy QUICK_APP to ``space_ids``; with ``gate``, its server waits for that file first."""
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    tree = tmp / ("gated" if gate else "quick")
    for path, text in QUICK_APP.items():
        if gate and path == "app.py":
            text = f"import os, time\nwhile not os.path.exists({str(gate)!r}): time.sleep(0.05)\n{text}"
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    for space_id in space_ids:
        api.create_repo(space_id, repo_type="space", space_sdk="docker", private=True)
        api.upload_folder(folder_path=tree, repo_id=space_id, repo_type="space")


def polls(hub: LocalHub, space_ids: list[str], wait: float = waits(60.0)) -> list[Poll]:
    connected = Hub.connect(hub.endpoint, token=hub.token, policy=FAST)
    return list(watch(connected, space_ids, wait=wait, interval=0.1))


def test_one_listing_per_cycle_however_many_spaces(hub: LocalHub, tmp_path: Path) -> None:
    ids = [f"acme/app{i}-0.3" for i in range(6)]
    gate = tmp_path / "go"  # the last Space serves only once the first cycle is seen
    deploy_quick(hub, tmp_path, *ids[:-1])
    deploy_quick(hub, tmp_path, ids[-1], gate=gate)
    hub.reset_counters()
    connected = Hub.connect(hub.endpoint, token=hub.token, policy=FAST)
    seen = []
    for poll in watch(connected, ids, wait=waits(60.0), interval=0.1):
        seen.append(poll)
        gate.touch()
    last = seen[-1]
    assert last.final and last.pending == []
    assert {s.stage for s in last.states.values()} == {"RUNNING"}
    assert all(s.domains and s.domains[0].stage == "READY" and s.sha for s in last.states.values())
    assert len(seen) > 1 and all(p.listings == 1 for p in seen)
    counters = hub.counters().by_endpoint
    assert counters.get("list_repos") == len(seen)
    assert set(counters) == {"list_repos"}  # no per-Space calls


def test_each_author_is_listed_only_while_it_has_a_space_on_its_way(hub: LocalHub, tmp_path: Path) -> None:
    deploy_quick(hub, tmp_path, "acme/stuck-one", "beta/app-1")
    hub.reset_counters()
    seen = polls(hub, ["acme/stuck-one", "beta/app-1"], wait=waits(3.0))
    assert seen[0].listings == 2 and seen[-1].listings == 1
    final = seen[-1]
    assert final.final and final.pending == ["acme/stuck-one"]
    assert final.states["acme/stuck-one"].stage == "APP_STARTING"
    assert final.states["beta/app-1"].ready
    assert hub.counters().by_endpoint["list_repos"] == sum(p.listings for p in seen)


def test_build_errors_are_terminal_failures_with_their_message(hub: LocalHub, tmp_path: Path) -> None:
    deploy_quick(hub, tmp_path, "acme/broken-x")
    state = settle(Hub.connect(hub.endpoint, token=hub.token, policy=FAST), "acme/broken-x", wait=waits(30), interval=0.1)
    assert state.failed and state.stage == "BUILD_ERROR"
    assert state.error == "pip failed: no matching distribution"


def test_a_sleeping_space_is_ready(hub: LocalHub, tmp_path: Path) -> None:
    deploy_quick(hub, tmp_path, "acme/sleepy-x")
    last = polls(hub, ["acme/sleepy-x"])[-1]
    assert last.states["acme/sleepy-x"].stage == "SLEEPING" and last.states["acme/sleepy-x"].ready


def test_a_missing_space_is_a_failure_at_once(hub: LocalHub) -> None:
    seen = polls(hub, ["acme/never-made"])
    assert len(seen) == 1 and seen[0].states["acme/never-made"].failed
    assert "not found" in (seen[0].states["acme/never-made"].error or "")


def test_space_state_reads_the_runtime_dict() -> None:
    runtime = {
        "stage": "RUNTIME_ERROR",
        "sha": "abc",
        "errorMessage": "line 1\nline 2\nboom",
        "hardware": {"current": None, "requested": "cpu-basic"},
        "domains": [{"domain": "a.hf.space", "stage": "READY"}, {"domain": "b.hf.space"}],
    }
    state = SpaceState.of("acme/x", RemoteSpace("acme/x", True, "head", runtime), 1.5)
    assert state.failed and not state.ready and state.sha == "abc" and state.hardware == "cpu-basic"
    assert [(d.name, d.stage) for d in state.domains] == [("a.hf.space", "READY"), ("b.hf.space", "")]
    assert state.error_tail(2) == "line 2\nboom"


def test_common_suffix_is_the_listing_search() -> None:
    assert common_suffix(["echo_env-0.2.2", "maze_env-0.2.2"]) == "_env-0.2.2"
    assert common_suffix(["only-1"]) == "only-1"
    assert common_suffix(["a", "b"]) is None


@pytest.mark.parametrize(
    ("text", "name"),
    [
        (SHADOWING, "stdlib-shadowing"),
        ("ImportError: cannot import name 'Enum' from partially initialized module 'enum'", "stdlib-shadowing"),
        ("ImportError: cannot import name 'GenericAlias' from 'types' (/app/src/core/types.py)", "stdlib-shadowing"),
        ("ModuleNotFoundError: No module named 'gymnasium'", "missing-dependency"),
        ("error: The lockfile at `uv.lock` needs to be updated, but `--frozen` was provided.", "uv-lock-mismatch"),
        ('/bin/sh: 1: [sh,: not found', "malformed-cmd"),
    ],
)
def test_builtin_signatures_name_known_failures(text: str, name: str) -> None:
    state = SpaceState("acme/x", "RUNTIME_ERROR", None, f"Traceback...\n{text}")
    assert [s.name for s, _ in diagnose(state, SIGNATURES)] == [name]


@pytest.mark.parametrize(
    "text",
    [
        "ImportError: cannot import name 'x' from partially initialized module 'mypkg'",
        "ImportError: cannot import name 'Foo' from 'types' (/usr/lib/python3.11/types.py)",
    ],
)
def test_an_unknown_failure_matches_no_signature(text: str) -> None:
    assert diagnose(SpaceState("acme/x", "RUNTIME_ERROR", None, text), SIGNATURES) == ()


def test_plugins_add_signatures_and_a_duplicate_name_is_an_error() -> None:
    import sys
    import types

    module = types.ModuleType("extra_signatures")
    module.openenv_release_signatures = hookimpl(  # type: ignore[attr-defined]
        lambda: (Signature("stdlib-shadowing", "x", "y"),)
    )
    sys.modules[module.__name__] = module
    try:
        registry = builtin_registry()
        assert {o.record.name for o in registry.signatures()} >= {s.name for s in SIGNATURES}
        assert registry.signatures()[0].plugin == "releaselib.hub.signatures"
        clash = PluginRegistry(
            get_plugin_manager(["releaselib.hub.signatures", module.__name__], entry_points=False, disabled=())
        )
        with pytest.raises(PluginError, match=r"stdlib-shadowing is defined by releaselib\.hub\.signatures and extra_signatures"):
            clash.signatures()
    finally:
        sys.modules.pop(module.__name__)


def test_a_signature_with_a_bad_pattern_is_refused() -> None:
    with pytest.raises(ValueError, match="bad pattern"):
        Signature("bad", "(", "fix")
