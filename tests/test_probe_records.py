"""A ``Probe`` means what it says: sent as declared (method, path, body, expected status), in
order, by ``verify`` and by ``staged_run`` alike; a field the verifier cannot honour is refused
where the record is made, and a plugin returning one is a PluginError."""

from __future__ import annotations

import shutil
import sys
import types
from pathlib import Path

import pytest

from releaselib.errors import PluginError
from releaselib.hookspecs import hookimpl
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.records import Probe
from releaselib.stage.staged_checks import run_staged
from releaselib.verify.probe import Outcome
from tests.helpers import waits

ENVS = Path(__file__).resolve().parent / "usable_envs"
DOCKERFILE = Path(__file__).resolve().parents[1] / "examples/envs/echo_env/server/Dockerfile"
LOOK = Probe("look", "POST", "/step", {"action": {"command": "look"}})


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (("GET", "/step"), "/step is probed by POST expecting 200"),
        (("POST", "/reset", None, 201), "/reset is probed by POST expecting 200"),
        (("POST", "/step", {"command": "look"}), 'a /step body is {"action": {...}}'),
        (("GET", "/metadata", {"a": 1}), "a body is a JSON object sent by POST"),
        (("POST", "/ws"), "path must start with '/' (no /ws, no query)"),
        (("GET", "/state?x=1"), "no query"),
        (("GET", "/health", None, 999), "expect_status must be an HTTP status"),
        (("post", "/step"), "method must be GET or POST"),
        (("POST", "/step", {"action": {"at": object()}}), "its body is not JSON"),
    ],
)
def test_a_field_the_verifier_cannot_honour_is_refused_where_it_is_made(fields, message) -> None:
    with pytest.raises(ValueError, match=f"^probe p: .*{__import__('re').escape(message)}"):
        Probe("p", *fields)


def test_a_plugin_returning_such_a_probe_is_a_plugin_error() -> None:
    module = types.ModuleType("plug_bad_probe")

    def openenv_release_probes(env: str) -> tuple[Probe, ...]:
        return (Probe("step", "GET", "/step"),)

    module.openenv_release_probes = hookimpl(openenv_release_probes)  # type: ignore[attr-defined]
    sys.modules["plug_bad_probe"] = module
    try:
        registry = PluginRegistry(get_plugin_manager(["plug_bad_probe"], entry_points=False))
        with pytest.raises(PluginError, match="plug_bad_probe raised in openenv_release_probes"):
            registry.probes("echo_env")
    finally:
        sys.modules.pop("plug_bad_probe", None)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("staged") / "step_error_env"
    shutil.copytree(ENVS / "step_error_env", dest, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(DOCKERFILE, dest / "Dockerfile")
    return dest


def test_staged_run_sends_the_plugins_probes_as_declared_in_order(tree: Path) -> None:
    metadata = Probe("metadata", "GET", "/metadata")
    absent = Probe("no tasks", "GET", "/tasks", expect_status=404)
    report = run_staged(
        "step_error_env", tree, probes=(metadata, absent, LOOK), start_timeout=waits(120)
    )
    assert report.outcome is Outcome.PASS, report.render()
    assert report.probe is not None
    sent = [(f"{e.method} {e.path}", e.sent, e.status) for e in report.probe.transcript]
    assert sent == [
        ("GET /health", "", 200),
        ("POST /reset", "{}", 200),
        ("GET /metadata", "", 200),
        ("GET /tasks", "", 404),
        ("POST /step", '{"action":{"command":"look"}}', 200),
    ]
