"""Plugin-declared needs: validated where they are made, declared by the built-in plugins that
have them, and in a rehearsal a FAIL of an env with needs is INCONCLUSIVE naming them."""

from __future__ import annotations

import dataclasses
import shutil
import ssl
import sys
import types
from pathlib import Path

import pytest
from huggingface_hub import SpaceHardware

from env_plugins import BUILTIN_PLUGINS
from releaselib.config import release_key
from releaselib.hookspecs import hookimpl
from releaselib.hub.client import Hub
from releaselib.hub.runtime import SpaceState
from releaselib.ledger.ledger import Ledger
from releaselib.ledger.paths import default_path
from releaselib.ledger.report import NEEDS_REMEDY
from releaselib.ledger.status import board
from releaselib.localhub import LocalHub
from releaselib.options import Options, build_config
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.records import CanonicalTarget, EnvProfile
from releaselib.rehearse import copy_checkout, examples_dir
from releaselib.release import Release, ReleaseOptions
from releaselib.stage.discover import discover_envs, select_envs
from releaselib.verify.candidates import VerifyResult, rehearsed
from releaselib.verify.probe import Outcome
from tests.helpers import TEST_SHA, waits


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"secrets": ("E2B API KEY",)}, "secret 'E2B API KEY' is not an env var name"),
        ({"secrets": "E2B_API_KEY"}, "secrets must be a tuple of strings"),
        ({"services": ("  ",)}, "a service must say in words what the env needs"),
        ({"services": "a Gitea server"}, "services must be a tuple of strings"),
        ({"hardware": "T4 GPU"}, "hardware 'T4 GPU' is not a Space hardware flavor"),
    ],
)
def test_a_bad_declaration_fails_where_it_is_made_naming_the_env(fields, message) -> None:
    with pytest.raises(ValueError, match=f"^git_env: {message}"):
        EnvProfile("git_env", **fields)


def test_needs_read_as_phrases_secrets_first() -> None:
    profile = EnvProfile(
        "x_env", secrets=("E2B_API_KEY",), hardware="t4-small", services=("a Gitea server",)
    )
    assert profile.needs == ("secret E2B_API_KEY", "hardware t4-small", "a Gitea server")
    assert EnvProfile("x_env", note="HF_TOKEN is optional").needs == ()


def test_the_builtin_plugins_declare_what_their_envs_need() -> None:
    registry = PluginRegistry(get_plugin_manager(entry_points=False, disabled=()))
    needs = {env: owned.record.needs for env, owned in registry.profiles().items()}
    for env in ("coding_tools_env", "jupyter_env", "terminus_env", "opencode_env"):
        assert needs[env] == ("secret E2B_API_KEY",)
    assert needs["websearch_env"] == ("secret SERPER_API_KEY",)
    assert needs["kernrl"] == ("hardware t4-small",)
    assert needs["carla_env"][0] == "hardware t4-medium" and "CARLA" in needs["carla_env"][1]
    assert needs["git_env"] == ("a Gitea server (GITEA_URL)",)
    downloads = {
        "chat_env": "GPT-2 tokenizer",
        "finqa_env": "finqa-data",
        "browsergym_env": "Chromium",
        "openapp_env": "OpenApps",
        "unity_env": "Unity binaries",
        "julia_env": "Julia",
        "tbench2_env": "Terminal-Bench-2",
        "textarena_env": "NLTK data",
        "dm_control_env": "OpenGL",
    }
    for env, what in downloads.items():
        assert len(needs[env]) == 1 and what in needs[env][0], env
    # optional secrets are no needs; envs that need only PyPI and a CPU declare nothing
    for env in ("calendar_env", "repl_env", "echo_env", "maze_env", "chess_env", "wildfire_env"):
        assert needs.get(env, ()) == (), env
    rows = {row["plugin"]: row for row in registry.describe()}  # what `plugins` lists
    assert rows["env_plugins.git_env"]["needs"] == ["git_env: a Gitea server (GITEA_URL)"]
    flavors = {h.value for h in SpaceHardware}
    assert all(o.record.hardware in flavors for o in registry.profiles().values() if o.record.hardware)


def result(outcome: Outcome, reason: str) -> VerifyResult:
    state = SpaceState("openenv/x_env-0.2.2", "RUNNING", "abc", None)
    return VerifyResult("x_env", state.space_id, state, outcome, reason)


def test_a_rehearsal_turns_the_fail_of_an_env_with_needs_inconclusive_and_names_them_on_its_own_time_outs() -> None:
    failed = rehearsed(result(Outcome.FAIL, "POST /reset answered 500"), ("secret E2B_API_KEY",), "venv")
    assert failed.outcome is Outcome.INCONCLUSIVE and failed.verdict.outcome == "INCONCLUSIVE"
    assert failed.reason.startswith("needs secret E2B_API_KEY, which a rehearsal (venv builder) cannot give")
    assert "verify against the real Hub" in failed.reason and failed.reason.endswith("POST /reset answered 500")
    assert failed.as_json()["needs"] == ["secret E2B_API_KEY"] and failed.ledger_status == "failed"
    kept = result(Outcome.PASS, "r")
    assert rehearsed(kept, ("secret E2B_API_KEY",), "venv") is kept
    theirs = result(Outcome.INCONCLUSIVE, "POST /reset answered 429")  # not our_error: a front door
    assert rehearsed(theirs, ("secret E2B_API_KEY",), "venv") is theirs
    ours = dataclasses.replace(result(Outcome.INCONCLUSIVE, "timed out at our limit"), our_error=True)
    named = rehearsed(ours, ("hardware t4-small",), "venv")
    assert named.outcome is Outcome.INCONCLUSIVE and named.needs == ()
    assert named.reason == "timed out at our limit; its plugin declares needs a rehearsal cannot give (hardware t4-small)"
    plain = result(Outcome.FAIL, "r")
    assert rehearsed(plain, (), "venv") is plain


def needing_plugin() -> str:
    """A plugin giving broken_env and echo_env (echo_env's own target kept) a required secret."""
    name = "plug_needs_e2b"
    module = types.ModuleType(name)

    def openenv_release_envs() -> tuple[EnvProfile, ...]:
        return (
            EnvProfile("broken_env", secrets=("E2B_API_KEY",)),
            EnvProfile("echo_env", targets=(CanonicalTarget("echo_env"),), secrets=("E2B_API_KEY",)),
        )

    module.openenv_release_envs = hookimpl(openenv_release_envs)  # type: ignore[attr-defined]
    sys.modules[name] = module
    return name


def test_in_a_rehearsal_an_env_that_needs_a_secret_is_inconclusive_and_never_pinned(tmp_path: Path) -> None:
    checkout = copy_checkout(examples_dir(), tmp_path / "OpenEnv")
    for env in ("legacy_env", "slow_env", "textarena_env"):
        shutil.rmtree(checkout / "envs" / env)
    pyproject = checkout / "envs" / "broken_env" / "pyproject.toml"
    before = pyproject.read_bytes()
    plugins = [p for p in BUILTIN_PLUGINS if p != "env_plugins.echo_env"] + [needing_plugin()]
    try:
        registry = PluginRegistry(get_plugin_manager(plugins, entry_points=False, disabled=()))
        with LocalHub(tmp_path / "hub", user="openenv", builder="host", openenv=checkout) as local:
            config, resolution = build_config(
                Options(
                    repo=str(checkout), staging_dir=str(tmp_path / "staging"),
                    hub_endpoint=local.endpoint, remote=str(tmp_path / "no-remote"), ref=TEST_SHA, dist="openenv", namespace="openenv",
                )
            )
            hub = Hub.connect(local.endpoint, token=local.token)
            ledger = Ledger.load(default_path(config), release_key(config))
            tls = ssl.create_default_context(cafile=str(local.ca_bundle))
            specs = select_envs(discover_envs(checkout), [])

            def release(rehearsal: str | None):
                options = ReleaseOptions(  # without a rehearsal, the embedded Hub stands in for the real one
                    timeout=waits(5.0), wait=waits(120.0), interval=0.5, tls=tls, rehearsal=rehearsal, allow_embedded_hub=rehearsal is None,
                )
                return Release(config, resolution, hub, registry, ledger, options).run(specs)

            rehearsal = release("host")
            envs = {e["env"]: e for e in rehearsal.report["envs"]}
            assert envs["echo_env"]["outcome"] == "PASS"  # a PASS stays a PASS
            broken = envs["broken_env"]
            assert broken["outcome"] == "INCONCLUSIVE" and broken["needs"] == ["secret E2B_API_KEY"]
            assert broken["reason"].startswith("needs secret E2B_API_KEY, which a rehearsal (host builder) cannot give")
            assert ledger.env("broken_env").get("pin").data["decision"] != "pinned"
            assert pyproject.read_bytes() == before
            (inconclusive,) = rehearsal.report["inconclusive"]
            assert inconclusive["env"] == "broken_env" and inconclusive["remedy"] == NEEDS_REMEDY
            assert rehearsal.briefing is not None
            assert "needs secret E2B_API_KEY" in rehearsal.briefing.read_text()
            rows = {r.env: r for r in board(ledger, {}, config)}
            assert rows["broken_env"].next_action.startswith("release it against the real Hub (needs secret E2B_API_KEY")

            real = release(None)  # the same env, no rehearsal: its failure is evidence again
            broken = {e["env"]: e for e in real.report["envs"]}["broken_env"]
            assert broken["outcome"] == "FAIL" and broken["needs"] == [] and broken["decision"] == "pinned"
            assert pyproject.read_bytes() != before
    finally:
        sys.modules.pop("plug_needs_e2b", None)
