"""An allowed secret comes from the plugin that claims the env and names only that env's files."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest

from releaselib.errors import PluginError
from releaselib.hookspecs import hookimpl
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.records import AllowedSecret, EnvProfile
from releaselib.stage.discover import discover_envs
from releaselib.stage.stage_env import stage_envs
from tests.helpers import write
from tests.test_bad_input import config_for
from tests.test_stage_fences import CANARY, checkout, git

__all__ = ["checkout"]  # the fixture, imported for pytest

AWS_KEY = "AKIA" + "".join(random.choices(string.ascii_uppercase + "234567", k=16))


class Claims:
    def __init__(self, *envs: str) -> None:
        self.envs = envs

    @hookimpl
    def openenv_release_envs(self) -> list[EnvProfile]:
        return [EnvProfile(env) for env in self.envs]


class AllowsEverything:
    """Allows ``pattern`` for whichever env it is asked about."""

    def __init__(self, pattern: str = "envs/*") -> None:
        self.pattern = pattern

    @hookimpl
    def openenv_release_allowed_secrets(self, env: str) -> list[AllowedSecret]:
        return [AllowedSecret(self.pattern, why="everything is fine")]


class Owns(AllowsEverything):
    """Claims ``env`` and allows ``pattern``."""

    def __init__(self, env: str, pattern: str) -> None:
        super().__init__(pattern)
        self.env = env

    @hookimpl
    def openenv_release_envs(self) -> list[EnvProfile]:
        return [EnvProfile(self.env)]

    @hookimpl
    def openenv_release_allowed_secrets(self, env: str) -> list[AllowedSecret]:
        return [AllowedSecret(self.pattern, why="only mine")] if env == self.env else []


def registry(*plugins: object) -> PluginRegistry:
    pm = get_plugin_manager(entry_points=False, disabled=())
    for plugin in plugins:
        pm.register(plugin, name=type(plugin).__name__)
    return PluginRegistry(pm)


def plant(checkout: Path, env: str) -> None:
    """A real-format Hub token and AWS key in a tracked file of ``env``."""
    write(checkout / "envs" / env / "server" / "settings.py", f"HF = '{CANARY}'\nAWS = '{AWS_KEY}'\n")
    git(checkout, "add", "-A")


def staged_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file()) if root.exists() else b""


def test_an_allowed_secret_from_a_plugin_that_does_not_claim_the_env_stages_nothing(checkout: Path, tmp_path: Path) -> None:
    plant(checkout, "b_env")
    reg = registry(Claims("a_env", "b_env"), AllowsEverything())
    with pytest.raises(PluginError, match=r"plugin AllowsEverything returned allowed secret envs/\* for env b_env, which it does not claim \(Claims claims it\)"):
        reg.allowed_secrets("b_env")
    with pytest.raises(PluginError, match=r"plugin AllowsEverything returned allowed secret envs/\* for env a_env"):
        reg.describe()  # the `plugins` task says so too (exit 3)
    config = config_for(checkout, tmp_path)
    staged = {s.env: s for s in stage_envs(config, discover_envs(checkout), reg)}
    assert not staged["b_env"].ok
    assert "AllowsEverything" in str(staged["b_env"].error) and "b_env" in str(staged["b_env"].error)
    tree = staged_bytes(config.staging_dir)
    assert CANARY.encode() not in tree and AWS_KEY.encode() not in tree


def test_the_claimants_allowed_secret_cannot_reach_another_envs_files(checkout: Path, tmp_path: Path) -> None:
    for pattern in ("envs/*/server/settings.py", "envs/a_env*/server/*", "src/*", "pyproject.toml"):
        with pytest.raises(PluginError, match=r"plugin Owns allows secret .* for env a_env, a path outside envs/a_env/"):
            registry(Owns("a_env", pattern), Claims("b_env")).allowed_secrets("a_env")
    plant(checkout, "b_env")
    config = config_for(checkout, tmp_path)
    reg = registry(Owns("a_env", "envs/*"), Claims("b_env"))
    staged = {s.env: s for s in stage_envs(config, discover_envs(checkout), reg)}
    assert "a path outside envs/a_env/" in str(staged["a_env"].error)
    assert not staged["b_env"].ok and "Hugging Face token" in str(staged["b_env"].error)
    assert CANARY.encode() not in staged_bytes(config.staging_dir)


def test_the_claimant_allows_its_own_file(checkout: Path, tmp_path: Path) -> None:
    plant(checkout, "b_env")
    config = config_for(checkout, tmp_path)
    reg = registry(Owns("b_env", "envs/b_env/server/*.py"))
    staged = {s.env: s for s in stage_envs(config, discover_envs(checkout), reg)}
    assert staged["b_env"].ok, staged["b_env"].error
    assert [(f.path, f.line) for f in staged["b_env"].allowed_secrets] == [
        ("envs/b_env/server/settings.py", 1),
        ("envs/b_env/server/settings.py", 2),
    ]
