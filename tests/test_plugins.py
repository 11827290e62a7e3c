"""The plugin manager and registry: attribution, clashes, broken plugins, misspelled hooks."""

from __future__ import annotations

import sys
import types

import pytest

from releaselib.errors import PluginError
from releaselib.hookspecs import hookimpl
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.records import CanonicalTarget, Check, EnvProfile, Fix, Probe


def plugin_module(name: str, **hooks: object) -> str:
    """Register a throwaway module named ``name`` holding ``hooks`` and return its import path."""
    module = types.ModuleType(name)
    for hook_name, function in hooks.items():
        setattr(module, hook_name, hookimpl(function))
    sys.modules[name] = module
    return name


@pytest.fixture
def make_registry(monkeypatch: pytest.MonkeyPatch):
    created: list[str] = []

    def make(*modules: str) -> PluginRegistry:
        created.extend(modules)
        return PluginRegistry(get_plugin_manager(modules, entry_points=False, disabled=()))

    yield make
    for name in created:
        sys.modules.pop(name, None)


def test_profiles_are_attributed_to_their_plugin(make_registry) -> None:
    a = plugin_module(
        "plug_a",
        openenv_release_envs=lambda: [EnvProfile("repl_env", targets=(CanonicalTarget("repl"),))],
    )
    registry = make_registry(a)
    assert registry.plugin_for("repl_env") == "plug_a"
    assert registry.profile("repl_env").targets[0].repo == "repl"
    assert registry.profile("unknown_env") == EnvProfile("unknown_env")


def test_two_plugins_claiming_one_env_is_an_error_naming_both(make_registry) -> None:
    a = plugin_module("plug_a", openenv_release_envs=lambda: [EnvProfile("echo_env")])
    b = plugin_module("plug_b", openenv_release_envs=lambda: [EnvProfile("echo_env")])
    with pytest.raises(PluginError, match="echo_env is claimed by two plugins: plug_a and plug_b"):
        make_registry(a, b).profiles()


def test_two_envs_claiming_one_canonical_repo_is_an_error(make_registry) -> None:
    a = plugin_module(
        "plug_a",
        openenv_release_envs=lambda: [EnvProfile("x_env", targets=(CanonicalTarget("shared"),))],
    )
    b = plugin_module(
        "plug_b",
        openenv_release_envs=lambda: [EnvProfile("y_env", targets=(CanonicalTarget("shared"),))],
    )
    with pytest.raises(
        PluginError, match=r"canonical repo shared is claimed by x_env \(plug_a\) and y_env \(plug_b\)"
    ):
        make_registry(a, b).profiles()


def test_a_plugin_that_raises_is_named(make_registry) -> None:
    def boom(env: str):
        raise RuntimeError("kaput")

    registry = make_registry(plugin_module("plug_boom", openenv_release_fixes=boom))
    with pytest.raises(
        PluginError, match=r"plugin plug_boom raised in openenv_release_fixes: RuntimeError: kaput"
    ):
        registry.fixes("echo_env")


def test_a_plugin_returning_dicts_is_refused(make_registry) -> None:
    registry = make_registry(
        plugin_module("plug_dict", openenv_release_fixes=lambda env: [{"name": "x"}])
    )
    with pytest.raises(PluginError, match="returned dict"):
        registry.fixes("echo_env")


def test_a_misspelled_hook_is_an_error() -> None:
    module = types.ModuleType("plug_typo")
    module.openenv_release_fixez = hookimpl(lambda env: ())  # type: ignore[attr-defined]
    sys.modules["plug_typo"] = module
    try:
        with pytest.raises(PluginError, match="unknown hook"):
            get_plugin_manager(["plug_typo"], entry_points=False, disabled=())
    finally:
        del sys.modules["plug_typo"]


def test_a_plugin_that_fails_to_import_is_named() -> None:
    with pytest.raises(PluginError, match="plugin no_such_plugin_module failed to import"):
        get_plugin_manager(["no_such_plugin_module"], entry_points=False, disabled=())


def test_disabled_plugins_are_not_loaded(make_registry, monkeypatch: pytest.MonkeyPatch) -> None:
    a = plugin_module("plug_a", openenv_release_envs=lambda: [EnvProfile("echo_env")])
    monkeypatch.setenv("OPENENV_RELEASE_DISABLE_PLUGINS", "plug_a")
    registry = PluginRegistry(get_plugin_manager([a], entry_points=False))
    assert registry.profiles() == {}
    del sys.modules["plug_a"]


def test_fixes_only_come_from_plugins_that_own_the_env(make_registry) -> None:
    def fixes(env: str):
        return [Fix("f", "because", lambda tree: None)] if env == "maze_env" else []

    registry = make_registry(
        plugin_module(
            "plug_fix", openenv_release_envs=lambda: [EnvProfile("maze_env")], openenv_release_fixes=fixes
        )
    )
    assert [o.record.name for o in registry.fixes("maze_env")] == ["f"]
    assert registry.fixes("echo_env") == []


def test_records_validate_their_fields() -> None:
    with pytest.raises(ValueError, match="bare repo name"):
        CanonicalTarget("openenv/repl")
    with pytest.raises(ValueError, match="not a valid env name"):
        EnvProfile("../x")


def claims(*envs: str):
    """An ``openenv_release_envs`` implementation claiming ``envs``."""
    return lambda: [EnvProfile(env) for env in envs]


def a_fix(name: str) -> Fix:
    return Fix(name, "because", lambda tree: None)


def test_a_fix_for_an_env_the_plugin_does_not_claim_is_an_error(make_registry) -> None:
    owner = plugin_module("plug_owner", openenv_release_envs=claims("maze_env"))
    meddler = plugin_module(
        "plug_meddler", openenv_release_fixes=lambda env: [a_fix("meddle")] if env else []
    )
    registry = make_registry(owner, meddler)
    with pytest.raises(
        PluginError,
        match=r"plugin plug_meddler returned fix meddle for env maze_env, which it does not "
        r"claim \(plug_owner claims it\)",
    ):
        registry.fixes("maze_env")
    with pytest.raises(PluginError, match=r"for env echo_env.*\(no plugin claims it\)"):
        registry.fixes("echo_env")


def test_a_cross_cutting_fix_takes_no_env_and_goes_to_every_env(make_registry) -> None:
    owner = plugin_module(
        "plug_owner",
        openenv_release_envs=claims("maze_env"),
        openenv_release_fixes=lambda env: [a_fix("own")] if env == "maze_env" else [],
    )
    everywhere = plugin_module("plug_everywhere", openenv_release_fixes=lambda: [a_fix("all")])
    registry = make_registry(owner, everywhere)
    assert [(o.plugin, o.record.name) for o in registry.fixes("maze_env")] == [
        ("plug_owner", "own"),
        ("plug_everywhere", "all"),
    ]
    assert [o.record.name for o in registry.fixes("echo_env")] == ["all"]


def step(name: str) -> Probe:
    return Probe(name, "POST", "/step", {"action": {"x": 1}})


def test_a_probe_for_an_env_the_plugin_does_not_claim_is_an_error(make_registry) -> None:
    owner = plugin_module("plug_owner", openenv_release_envs=claims("maze_env"))
    prober = plugin_module(
        "plug_prober", openenv_release_probes=lambda env: [Probe("reset", "POST", "/reset")]
    )
    with pytest.raises(PluginError, match="plugin plug_prober returned probe reset for env maze_env"):
        make_registry(owner, prober).probes("maze_env")


def test_a_probe_cannot_be_cross_cutting(make_registry) -> None:
    prober = plugin_module("plug_prober", openenv_release_probes=lambda: [step("s")])
    with pytest.raises(PluginError, match="returned probe s for env echo_env, which it does not"):
        make_registry(prober).probes("echo_env")


def test_step_probes_for_one_env_from_two_plugins_is_an_error_naming_both(make_registry) -> None:
    owner = plugin_module(
        "plug_owner",
        openenv_release_envs=claims("maze_env"),
        openenv_release_probes=lambda env: [step("mine")] if env == "maze_env" else [],
    )
    second = plugin_module("plug_second", openenv_release_probes=lambda env: [step("theirs")])
    with pytest.raises(
        PluginError, match="env maze_env gets a step probe from two plugins: plug_owner and plug_second"
    ):
        make_registry(owner, second).probes("maze_env")


def test_the_claimant_gives_probes_in_order(make_registry) -> None:
    owner = plugin_module(
        "plug_owner",
        openenv_release_envs=claims("maze_env"),
        openenv_release_probes=lambda env: [Probe("reset", "POST", "/reset"), step("s")],
    )
    registry = make_registry(owner)
    assert [o.record.name for o in registry.probes("maze_env")] == ["reset", "s"]


def test_tracing_prints_every_hook_call_with_its_plugin(
    make_registry, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    owner = plugin_module(
        "plug_owner",
        openenv_release_envs=claims("maze_env"),
        openenv_release_fixes=lambda env: [a_fix("own")] if env == "maze_env" else [],
    )
    monkeypatch.setenv("OPENENV_RELEASE_TRACE_PLUGINS", "1")
    registry = make_registry(owner)
    registry.fixes("maze_env")
    registry.checks()
    err = capsys.readouterr().err
    assert "openenv_release_envs [hook]" in err and "openenv_release_fixes [hook]" in err
    assert "env: maze_env" in err and "plugin: plug_owner" in err
    assert "finish openenv_release_fixes -->" in err and "name='own'" in err
    monkeypatch.delenv("OPENENV_RELEASE_TRACE_PLUGINS")
    make_registry(owner).fixes("maze_env")
    assert capsys.readouterr().err == ""


def test_a_hookwrapper_wraps_each_plugins_call(make_registry) -> None:
    """Calls go through pluggy's hook machinery, so a wrapper sees each plugin's answer."""
    seen: list[object] = []

    class Watcher:
        @hookimpl(wrapper=True)
        def openenv_release_checks(self):
            answers = yield
            seen.append(answers)
            return answers

    check = Check("c", "a check", lambda tree: [])
    registry = make_registry(plugin_module("plug_owner", openenv_release_checks=lambda: [check]))
    registry.pm.register(Watcher(), name="watcher")
    assert [(o.plugin, o.record) for o in registry.checks()] == [("plug_owner", check)]
    assert seen == [[[check]]]


def test_describe_lists_a_cross_cutting_fix_once(make_registry) -> None:
    owner = plugin_module(
        "plug_owner",
        openenv_release_envs=claims("maze_env", "echo_env"),
        openenv_release_fixes=lambda env: [a_fix("own")] if env == "maze_env" else [],
    )
    everywhere = plugin_module("plug_everywhere", openenv_release_fixes=lambda: [a_fix("all")])
    rows = {row["plugin"]: row for row in make_registry(owner, everywhere).describe()}
    assert rows["plug_owner"]["fixes"] == ["maze_env:own"]
    assert rows["plug_everywhere"]["fixes"] == ["*:all"]
