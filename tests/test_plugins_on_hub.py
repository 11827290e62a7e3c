"""The plugin contract on the embedded Hub: verify's hook calls are traced with their plugin, a
claimed env's step probe is what reaches its Space, and a probe from a plugin that does not
claim the env stops verify with the plugin's name (exit 3), before any request."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterator

import pytest

from releaselib.errors import PluginError
from releaselib.hookspecs import hookimpl
from releaselib.localhub import LocalHub
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.records import EnvProfile, Probe
from releaselib.verify.probe import Outcome
from tests.test_verify import deploy_examples, verify

BODY = {"action": {"message": "from a traced plugin"}}


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalHub]:
    root = tmp_path_factory.mktemp("plugins-on-hub")
    with LocalHub(root / "hub") as running:
        deploy_examples(running, root, {"echo_env": "echo_env"})
        yield running


@pytest.fixture
def plugins() -> Iterator[Callable[..., PluginRegistry]]:
    names: list[str] = []

    def make(name: str, **hooks: Callable[..., object]) -> PluginRegistry:
        module = types.ModuleType(name)
        for hook, function in hooks.items():
            setattr(module, hook, hookimpl(function))
        sys.modules[name] = module
        names.append(name)
        return PluginRegistry(get_plugin_manager([name], entry_points=False, disabled=()))

    yield make
    for name in names:
        sys.modules.pop(name, None)


def step_probe(env: str) -> tuple[Probe, ...]:
    return (Probe("step", "POST", "/step", BODY),)


def test_verify_traces_each_hook_call_and_sends_the_claimants_probe(
    hub: LocalHub,
    plugins: Callable[..., PluginRegistry],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENENV_RELEASE_TRACE_PLUGINS", "1")
    registry = plugins(
        "plug_traced",
        openenv_release_envs=lambda: (EnvProfile("echo_env"),),
        openenv_release_probes=lambda env: step_probe(env) if env == "echo_env" else (),
    )
    result = verify(hub, "echo_env", plugins=registry)["echo_env"]
    assert result.outcome is Outcome.PASS, result.reason
    assert "from a traced plugin" in result.attempts[0].result.transcript[-1].body
    trace = capsys.readouterr().err
    assert "openenv_release_probes [hook]" in trace and "env: echo_env" in trace
    assert "plugin: plug_traced" in trace and "from a traced plugin" in trace


def test_a_probe_from_a_plugin_that_does_not_claim_the_env_stops_verify(
    hub: LocalHub, plugins: Callable[..., PluginRegistry]
) -> None:
    registry = plugins("plug_meddler", openenv_release_probes=step_probe)
    hub.reset_counters()
    with pytest.raises(PluginError) as raised:
        verify(hub, "echo_env", plugins=registry)
    assert raised.value.exit_code == 3
    assert "plugin plug_meddler returned probe step for env echo_env" in raised.value.one_line()
    assert hub.counters().requests == 0
