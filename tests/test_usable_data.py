"""A PASS means the env worked: the example envs of tests/usable_envs, each a real openenv-core
server on the embedded Hub, get their right verdict and reason, and every built-in plugin's
declared needs reach the verdict and the ledger."""

from __future__ import annotations

import json
import shutil
import ssl
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from huggingface_hub import HfApi

from env_plugins import BUILTIN_PLUGINS
from releaselib.config import ReleaseConfig
from releaselib.hookspecs import hookimpl
from releaselib.hub.client import Hub
from releaselib.hub.retry import RetryPolicy
from releaselib.hub.runtime import SpaceState, settle
from releaselib.ledger.ledger import Ledger
from releaselib.localhub import LocalHub
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.records import EnvProfile, Probe
from releaselib.verify.candidates import (
    VerifyResult,
    check_space,
    plan_for,
    record_result,
    rehearsed,
    verify_spaces,
)
from releaselib.verify.probe import Outcome
from tests.helpers import waits

ENVS = Path(__file__).resolve().parent / "usable_envs"
DOCKERFILE = Path(__file__).resolve().parents[1] / "examples/envs/echo_env/server/Dockerfile"
SUFFIX = "-0.2.2"
#: Space name -> (the env of tests/usable_envs it serves, its Space secrets and variables)
SPACES: dict[str, tuple[str, dict[str, str], dict[str, str]]] = {
    "reset_error_env": ("reset_error_env", {}, {}),
    "step_error_env": ("step_error_env", {}, {}),
    "step_probed_env": ("step_error_env", {}, {}),
    "step_misprobed_env": ("step_error_env", {}, {}),
    "tools_env": ("tools_env", {}, {}),
    "tools_ws_env": ("tools_env", {}, {"WS_ONLY": "1"}),
    "secret_env": ("secret_env", {}, {}),
    "secret_given_env": ("secret_env", {"TOOLS_API_KEY": "k-123"}, {}),
    "needy_env": (
        "secret_env",
        {},
        {
            "MISSING_MESSAGE": "E2B_API_KEY and SERPER_API_KEY are not set, no CUDA GPU, cannot "
            "reach Gitea, CARLA, Unity, SUMO, MiniWoB, OpenSpiel, Terminal-Bench-2, GPT-2, NLTK, "
            "OpenGL, OpenApps, Julia, Snowflake/AgentWorldModel-1K or snorkelai/finqa-data"
        },
    ),
}
LOOK = Probe("look", "POST", "/step", {"action": {"command": "look"}})
DANCE = Probe("dance", "POST", "/step", {"action": {"command": "dance"}})


def plugin() -> str:
    """The test envs' plugin: secret_env's declared secret, step_probed_env's step and
    step_misprobed_env's (a command the env does not know)."""
    name = "plug_usable_envs"
    module = types.ModuleType(name)

    def openenv_release_envs() -> tuple[EnvProfile, ...]:
        secret = tuple(
            EnvProfile(env, secrets=("TOOLS_API_KEY",))
            for env in ("secret_env", "secret_given_env")
        )
        return (*secret, EnvProfile("step_probed_env"), EnvProfile("step_misprobed_env"))

    def openenv_release_probes(env: str) -> tuple[Probe, ...]:
        return {"step_probed_env": (LOOK,), "step_misprobed_env": (DANCE,)}.get(env, ())

    module.openenv_release_envs = hookimpl(openenv_release_envs)  # type: ignore[attr-defined]
    module.openenv_release_probes = hookimpl(openenv_release_probes)  # type: ignore[attr-defined]
    sys.modules[name] = module
    return name


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalHub]:
    root = tmp_path_factory.mktemp("usable")
    with LocalHub(root / "hub") as running:
        api = HfApi(endpoint=running.endpoint, token=running.token)
        for space, (env, secrets, variables) in SPACES.items():
            tree = root / "trees" / space
            shutil.copytree(ENVS / env, tree, ignore=shutil.ignore_patterns("__pycache__"))
            shutil.copyfile(DOCKERFILE, tree / "Dockerfile")
            repo_id = f"openenv/{space}{SUFFIX}"
            api.create_repo(repo_id, repo_type="space", space_sdk="docker", private=True)
            for key, value in secrets.items():
                api.add_space_secret(repo_id, key, value)
            for key, value in variables.items():
                api.add_space_variable(repo_id, key, value)
            api.upload_folder(repo_id=repo_id, repo_type="space", folder_path=tree)
        yield running


@pytest.fixture(scope="module")
def results(hub: LocalHub) -> Iterator[dict[str, VerifyResult]]:
    name = plugin()
    try:
        registry = PluginRegistry(get_plugin_manager([*BUILTIN_PLUGINS, name], entry_points=False))
        found = verify_spaces(
            connect(hub),
            [f"openenv/{space}{SUFFIX}" for space in SPACES if space != "needy_env"],
            suffix=SUFFIX,
            registry=registry,
            timeout=waits(30.0),
            wait=waits(120.0),
            interval=0.2,
            tls=tls(hub),
        )
        yield {r.env: r for r in found}
    finally:
        sys.modules.pop(name, None)


def connect(hub: LocalHub) -> Hub:
    return Hub.connect(hub.endpoint, token=hub.token, policy=RetryPolicy(attempts=4, base=0.01))


def tls(hub: LocalHub) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(hub.ca_bundle))


def sent(result: VerifyResult) -> list[tuple[str, str]]:
    assert result.decisive is not None
    return [(f"{e.method} {e.path}", e.sent) for e in result.decisive.result.transcript]


def test_an_error_on_the_first_reset_is_the_envs_fail(results: dict[str, VerifyResult]) -> None:
    result = results["reset_error_env"]
    assert result.outcome is Outcome.FAIL and not result.needs
    assert "POST /reset answered an observation with done on the first reset: " in result.reason
    assert "Parameter 'scenario' is required" in result.reason
    assert result.as_json()["evidence"]["reset"]["sent"] == '{"type":"reset","data":{}}'  # /ws
    assert "Parameter 'scenario' is required" in result.as_json()["evidence"]["reset"]["answer"]


def test_an_error_answering_the_schemas_action_is_our_guess_refused_and_its_probe_passes(
    results: dict[str, VerifyResult],
) -> None:
    """The env handled the action we derived from /schema and said no: that is our request
    refused (INCONCLUSIVE, never pinned), with the remedy; the plugin's step probe passes."""
    wrong = results["step_error_env"]
    assert wrong.outcome is Outcome.INCONCLUSIVE and wrong.our_error, wrong.reason
    assert "probe error: POST /step answered an observation with error: unknown command ''" in wrong.reason
    assert "the /step body was derived from /schema" in wrong.reason
    assert "give the env's plugin a step probe (docs/adding-a-plugin.md §4)" in wrong.reason
    assert ("POST /step", '{"action":{"command":""}}') in sent(wrong)

    probed = results["step_probed_env"]
    assert probed.outcome is Outcome.PASS, probed.reason
    assert sent(probed)[1:] == [
        ("POST /reset", "{}"),
        ("POST /step", '{"action":{"command":"look"}}'),
    ]
    step = probed.as_json()["evidence"]["step"]
    assert step["sent"] == '{"action":{"command":"look"}}' and '"said":"you look"' in step["answer"]


def test_an_error_answering_a_plugins_step_probe_is_the_envs_fail_without_the_hint(
    results: dict[str, VerifyResult],
) -> None:
    probed = results["step_misprobed_env"]
    assert probed.outcome is Outcome.FAIL
    assert "POST /step answered an observation with error: unknown command 'dance'" in probed.reason
    assert ("POST /step", '{"action":{"command":"dance"}}') in sent(probed)
    assert "derived from /schema" not in probed.reason


def test_a_tool_calling_env_passes_only_on_a_real_call_with_arguments(
    results: dict[str, VerifyResult],
) -> None:
    result = results["tools_env"]
    assert result.outcome is Outcome.PASS, result.reason
    steps = [body for request, body in sent(result) if request == "POST /step"]
    assert json.loads(steps[0]) == {"action": {"type": "list_tools"}}
    call = json.loads(steps[1])["action"]
    assert call == {"type": "call_tool", "tool_name": "add", "arguments": {"a": 0, "b": 0}}
    answer = json.loads(result.as_json()["evidence"]["step"]["answer"])
    assert answer["observation"]["error"] is None and answer["observation"]["result"]["data"] == 0


def test_a_tool_calling_env_served_over_ws_only_lists_and_calls_there(
    results: dict[str, VerifyResult],
) -> None:
    result = results["tools_ws_env"]
    assert result.outcome is Outcome.PASS, result.reason
    assert "usable observations over /ws (HTTP POST /reset answered 400" in result.reason
    over_ws = [json.loads(body) for request, body in sent(result) if request == "WS step"]
    assert over_ws == [
        {"type": "step", "data": {"type": "list_tools"}},
        {
            "type": "step",
            "data": {"type": "call_tool", "tool_name": "add", "arguments": {"a": 0, "b": 0}},
        },
    ]


def test_a_missing_declared_secret_is_inconclusive_naming_it_and_given_it_passes(
    results: dict[str, VerifyResult], tmp_path: Path
) -> None:
    lacking = results["secret_env"]
    assert lacking.outcome is Outcome.INCONCLUSIVE and not lacking.our_error, lacking.reason
    assert lacking.needs == ("secret TOOLS_API_KEY",) == lacking.declared_needs
    assert "needs secret TOOLS_API_KEY (give the Space what it needs" in lacking.reason
    assert "TOOLS_API_KEY is not set" in lacking.reason
    ledger = Ledger.load(tmp_path / "ledger.json", release())
    record_result(ledger, lacking)
    data = ledger.env("secret_env").get("verify").data
    assert data["needs"] == data["declared_needs"] == ["secret TOOLS_API_KEY"]
    assert data["evidence"]["reset"]["sent"] and "TOOLS_API_KEY is not set" in json.dumps(data)

    given = results["secret_given_env"]
    assert given.outcome is Outcome.PASS and given.declared_needs == ("secret TOOLS_API_KEY",)
    assert given.needs == ()


def test_every_builtin_plugins_declared_needs_reach_the_verdict_and_the_ledger(
    hub: LocalHub, tmp_path: Path
) -> None:
    registry = PluginRegistry(get_plugin_manager(entry_points=False, disabled=()))
    needing = {env: o.record.needs for env, o in registry.profiles().items() if o.record.needs}
    assert {"kernrl", "tbench2_env", "git_env", "coding_tools_env"} <= needing.keys()
    state = settle(connect(hub), f"openenv/needy_env{SUFFIX}", wait=waits(120), interval=0.2)
    assert state.stage == "RUNNING"
    ledger = Ledger.load(tmp_path / "ledger.json", release())
    headers = connect(hub).auth_header()
    for env, needs in needing.items():  # the needy Space stands in for each env
        plan = plan_for(registry, env, waits(30.0))
        result = check_space(state, plan, headers=headers, tls=tls(hub))
        assert result.outcome is Outcome.INCONCLUSIVE, (env, result.reason)
        assert result.needs == needs == result.declared_needs, (env, result.reason)
        assert f"needs {', '.join(needs)} (give the Space" in result.reason, env
        record_result(ledger, result)
        data = ledger.env(env).get("verify").data
        assert data["needs"] == data["declared_needs"] == list(needs), env


@pytest.mark.parametrize(
    ("env", "stage", "error", "outcome", "named"),
    [
        ("kernrl", "RUNTIME_ERROR", "RuntimeError: CUDA is not available", "INCONCLUSIVE", True),
        ("kernrl", "BUILD_ERROR", "nvcc: CUDA toolkit not found", "FAIL", False),
        ("kernrl", "RUNTIME_ERROR", "ImportError: cannot import name 'StepResult'", "FAIL", False),
        ("tbench2_env", "RUNTIME_ERROR", "failed to fetch Terminal-Bench-2", "INCONCLUSIVE", True),
    ],
)
def test_a_runtime_error_naming_a_declared_need_is_inconclusive_and_a_build_error_fails(
    env: str, stage: str, error: str, outcome: str, named: bool
) -> None:
    registry = PluginRegistry(get_plugin_manager(entry_points=False))
    plan = plan_for(registry, env, 20.0)
    state = SpaceState(f"openenv/{env}{SUFFIX}", stage, "abc", error)
    result = check_space(state, plan, headers={}, tls=ssl.create_default_context())
    assert result.outcome.value == outcome and result.declared_needs == plan.needs != ()
    assert result.needs == (plan.needs if named else ())
    if named:
        assert result.reason.startswith(f"needs {plan.needs[0]} (give the Space what it needs")
    assert error in result.reason


def test_a_build_error_wins_over_any_need_in_a_rehearsal() -> None:
    built = SpaceState("openenv/x_env-0.2.2", "BUILD_ERROR", "abc", "package dir 'tests' missing")
    failed = VerifyResult("x_env", built.space_id, built, Outcome.FAIL, "BUILD_ERROR: no tests")
    assert rehearsed(failed, ("secret E2B_API_KEY",), "venv") is failed
    crashed = SpaceState("openenv/x_env-0.2.2", "RUNTIME_ERROR", "abc", "KeyError: E2B_API_KEY")
    at_runtime = VerifyResult("x_env", crashed.space_id, crashed, Outcome.FAIL, "RUNTIME_ERROR")
    assert rehearsed(at_runtime, ("secret E2B_API_KEY",), "venv").outcome is Outcome.INCONCLUSIVE


def release() -> dict[str, Any]:
    config = ReleaseConfig(
        repo=Path("/nonexistent"), version="0.2.2", ref="main", ref_reason="test",
        dist="openenv", suffix=SUFFIX, staging_dir=Path("/nonexistent/staging"), jobs=1,
    )  # fmt: skip
    return config.as_json()
