"""Meta-tests: every hook is documented, in the README and in its docstring, and has an
implementation among the built-in plugins."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from releaselib import hookspecs
from releaselib.plugins import get_plugin_manager

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
HOOKS = sorted(
    name for name, value in vars(hookspecs).items()
    if name.startswith("openenv_release_") and inspect.isfunction(value)
)


def test_there_are_hooks() -> None:
    assert len(HOOKS) >= 5


@pytest.mark.parametrize("name", HOOKS)
def test_each_hook_is_documented(name: str) -> None:
    spec = getattr(hookspecs, name)
    signature = f"`{name}({', '.join(inspect.signature(spec).parameters)})`"
    assert signature in README, f"README.md's plugin table lacks {signature}"
    assert spec.__doc__ and len(spec.__doc__.strip()) > 20


#: Hooks for outside plugins only: the built-in envs have no secret-scan false positives.
OUTSIDE_ONLY = {"openenv_release_allowed_secrets"}


@pytest.mark.parametrize("name", [h for h in HOOKS if h not in OUTSIDE_ONLY])
def test_each_hook_has_a_builtin_implementation(name: str) -> None:
    pm = get_plugin_manager(entry_points=False, disabled=())
    assert getattr(pm.hook, name).get_hookimpls(), f"no built-in plugin implements {name}"
