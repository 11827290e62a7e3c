"""Meta-tests over env_plugins, and each built-in fix applied to a small staged tree."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import env_plugins
from env_plugins import BUILTIN_PLUGINS
from env_plugins._common import (
    drop_dirs,
    legacy_pythonpath,
    literal_from,
    tarball_instead_of_clone,
)
from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.plugins import PluginRegistry
from tests.helpers import builtin_registry


def env_modules() -> set[str]:
    return {
        m.name for m in pkgutil.iter_modules(env_plugins.__path__) if not m.name.startswith("_")
    }


#: Each env plugin module by name: the tests over one plugin take it as their id
#: (``test_...[tally_env]``), so ``pytest -v tests/env_plugins -k <env>`` shows yours checked.
ENV_MODULES = sorted(env_modules())


def test_the_builtin_list_names_exactly_the_env_modules() -> None:
    assert {f"env_plugins.{m}" for m in ENV_MODULES} == {
        p for p in BUILTIN_PLUGINS if p.startswith("env_plugins.")
    }


#: The per-env hooks; each starts with the guard ``plugin.new``'s shape gives it.
PER_ENV_HOOKS = (
    "openenv_release_fixes",
    "openenv_release_probes",
    "openenv_release_allowed_secrets",
)
GUARD = "    if env != ENV:\n        return ()\n"


@pytest.fixture(scope="module")
def registry() -> PluginRegistry:
    return builtin_registry()


@pytest.mark.parametrize("name", ENV_MODULES)
def test_the_plugin_is_registered_and_claims_its_own_env(name: str, registry: PluginRegistry) -> None:
    module = importlib.import_module(f"env_plugins.{name}")
    assert f"env_plugins.{name}" in BUILTIN_PLUGINS
    assert [p.env for p in module.openenv_release_envs()] == [name]
    assert registry.plugin_for(name) == f"env_plugins.{name}"


@pytest.mark.parametrize("name", ENV_MODULES)
def test_the_plugin_has_the_shape_plugin_new_writes(name: str, registry: PluginRegistry) -> None:
    """ENV names the module, the docstring starts with it, and every per-env hook starts with
    the guard that keeps it to its own env (the registry would refuse anything else)."""
    module = importlib.import_module(f"env_plugins.{name}")
    assert name == module.ENV
    assert (module.__doc__ or "").startswith(f"{name}: ")
    for hook in PER_ENV_HOOKS:
        if hasattr(module, hook):
            body = inspect.getsource(getattr(module, hook)).split(":\n", 1)[1]
            assert body.startswith(GUARD), f"{name}.{hook} does not start with the guard"
    # no PluginError: ownership holds
    assert all(o.plugin == f"env_plugins.{name}" for o in registry.fixes(name))
    assert all(o.plugin == f"env_plugins.{name}" for o in registry.probes(name))


def test_an_env_no_plugin_claims_gets_no_env_plugins_fixes_or_probes(
    registry: PluginRegistry,
) -> None:
    assert not any(o.plugin.startswith("env_plugins.") for o in registry.fixes("unclaimed_env"))
    assert not any(o.plugin.startswith("env_plugins.") for o in registry.probes("unclaimed_env"))


def test_the_seed_canonical_map_is_carried_by_plugins() -> None:
    registry = builtin_registry()
    targets = {
        env: [(t.repo, t.env_vars) for t in o.record.targets]
        for env, o in registry.profiles().items()
        if o.record.targets
    }
    assert targets["repl_env"] == [("repl", {})]
    assert targets["tbench2_env"] == [("tbench2", {})]
    assert targets["textarena_env"] == [
        ("sudoku", {"TEXTARENA_ENV_ID": "Sudoku-v0"}),
        ("wordle", {"TEXTARENA_ENV_ID": "Wordle-v0"}),
    ]
    for env in (
        "atari_env",
        "browsergym_env",
        "chat_env",
        "coding_env",
        "echo_env",
        "openspiel_env",
        "sumo_rl_env",
    ):
        assert targets[env] == [(env, {})]
    assert registry.profile("git_env").probe_timeout and registry.profile("unity_env").probe_timeout


def tree_with(tmp_path: Path, dockerfile: str) -> Path:
    (tmp_path / "Dockerfile").write_text(dockerfile)
    return tmp_path


def test_legacy_pythonpath_stages_src_core_and_keeps_an_existing_path(tmp_path: Path) -> None:
    (tmp_path / "src" / "openenv" / "core").mkdir(parents=True)
    (tmp_path / "src" / "openenv" / "core" / "env_client.py").write_text("")
    tree = tree_with(tmp_path, 'FROM python:3.11-slim\nENV PYTHONPATH=/app/env\nCMD ["x"]\n')
    fix = legacy_pythonpath("/app/env/src/core:/app/env/src:/app/env")
    assert "PYTHONPATH set to" in (fix.apply(tree) or "")
    assert (tree / "src" / "core" / "env_client.py").is_file()
    env = Dockerfile.parse((tree / "Dockerfile").read_text()).stage_env()
    assert env["PYTHONPATH"].startswith("/app/env/src/core:/app/env/src:/app/env")
    assert "already has" in (fix.apply(tree) or "")


def test_literal_from_resolves_the_arg_default(tmp_path: Path) -> None:
    tree = tree_with(
        tmp_path,
        'ARG OPENSPIEL_BASE_IMAGE=ghcr.io/meta-pytorch/openenv-openspiel-base:sha-e622c7e\nFROM ${OPENSPIEL_BASE_IMAGE}\nCMD ["y"]\n',
    )
    fix = literal_from("OPENSPIEL_BASE_IMAGE")
    assert fix.apply(tree)
    assert (
        "FROM ghcr.io/meta-pytorch/openenv-openspiel-base:sha-e622c7e\n"
        in (tree / "Dockerfile").read_text()
    )
    assert fix.apply(tree) is None


def test_drop_dirs_removes_only_the_named_folders(tmp_path: Path) -> None:
    for rel in (
        "client_notebooks/a.ipynb",
        "envs/calendar_env/client_notebooks/b.ipynb",
        "server/app.py",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    fix = drop_dirs("calendar_env", "client_notebooks")
    assert fix.apply(tmp_path) == "dropped client_notebooks, envs/calendar_env/client_notebooks"
    assert (tmp_path / "server" / "app.py").exists()
    assert fix.apply(tmp_path) is None


def test_a_git_clone_becomes_a_pinned_tarball(tmp_path: Path) -> None:
    tree = tree_with(
        tmp_path,
        'FROM python:3.11\nRUN apt-get update && git clone --depth 1 https://github.com/Farama-Foundation/miniwob-plusplus.git /app/miniwob-plusplus && echo done\nCMD ["y"]\n',
    )
    fix = tarball_instead_of_clone(
        "https://github.com/Farama-Foundation/miniwob-plusplus.git",
        "7fd85d71a4b6",
        "/app/miniwob-plusplus",
    )
    assert fix.apply(tree)
    text = (tree / "Dockerfile").read_text()
    assert "git clone" not in text
    assert (
        "apt-get update && mkdir -p /app/miniwob-plusplus && curl -fsSL https://github.com/Farama-Foundation/miniwob-plusplus/archive/7fd85d71a4b6.tar.gz"
        in text
    )
    assert text.rstrip().endswith('CMD ["y"]') and "&& echo done" in text
    assert fix.apply(tree) is None


@pytest.mark.parametrize("env", ["maze_env", "snake_env"])
def test_maze_and_snake_fix_is_registered(env: str) -> None:
    registry = builtin_registry()
    assert [o.record.name for o in registry.fixes(env)] == ["legacy-pythonpath"]


@pytest.mark.parametrize(
    ("env", "action"),
    [
        ("wildfire_env", {"action": "wait"}),
        ("chess_env", {"move": "e2e4"}),
        ("finqa_env", {"tool_name": "get_descriptions", "arguments": {"company_name": "apple"}}),
    ],
)
def test_envs_whose_schema_cannot_give_a_valid_step_bring_their_own(env: str, action: dict) -> None:
    registry = builtin_registry()
    steps = [o.record.body for o in registry.probes(env) if o.record.path == "/step"]
    assert steps == [{"action": action}]
    assert registry.probes("echo_env") == []  # echo's schema gives a valid step



def test_calendar_seed_data_webhook_is_an_allowed_finding_and_nothing_else_is(tmp_path: Path) -> None:
    from releaselib.errors import StageError
    from releaselib.stage.scan_cache import CleanVerdicts, ContentScan
    from releaselib.stage.secret_gate import scan_secrets
    from releaselib.stage.sources import Sources

    def Scanner() -> ContentScan:  # each a new run's scan, over one cache of verdicts
        return ContentScan(CleanVerdicts(tmp_path / "cache"))

    rel = "envs/calendar_env/server/data/watch_channel_seed_data.py"
    seed = tmp_path / "seed.py"  # the line as OpenEnv's calendar seed data has it (made up)
    seed.write_text('x = "https://hooks.slack.com/services/T123/B456/dev-calendar-notifications"\n')
    allowed = builtin_registry().allowed_secrets("calendar_env")
    (finding,) = scan_secrets(Sources({}, {rel: seed}, ()), Scanner(), allowed)
    assert (finding.path, finding.kind) == (rel, "Slack Token")
    assert finding.allowed_by and "calendar_env" in finding.allowed_by
    with pytest.raises(StageError, match="Slack Token"):
        scan_secrets(Sources({}, {"envs/calendar_env/server/app.py": seed}, ()), Scanner(), allowed)
    # another Slack secret in the same file is not the made-up one: it fails the env
    seed.write_text('x = "https://hooks.slack.com/services/T0A1B2C3D/B0A1B2C3D/abcdefghijklmnop"\n')
    with pytest.raises(StageError, match="Slack Token"):
        scan_secrets(Sources({}, {rel: seed}, ()), Scanner(), allowed)
def test_agent_world_model_resets_with_its_readmes_scenario_and_names_its_dataset() -> None:
    """Its reset without a scenario answers an error; the scenarios download from huggingface.co,
    which a rehearsal cannot reach, so that error must match a declared need."""
    from releaselib.verify.usable import needs_named

    registry = builtin_registry()
    resets = [o.record.body for o in registry.probes("agent_world_model_env")]
    assert resets == [{"scenario": "e_commerce_33", "task_idx": 0}]
    profile = registry.profiles()["agent_world_model_env"].record
    error = "LocalEntryNotFoundError: cannot reach huggingface.co for Snowflake/AgentWorldModel-1K"
    assert needs_named(error, profile.needs) == profile.services
