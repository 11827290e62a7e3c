"""Meta-tests: every hook is documented, in the README and in its docstring (parameters, what
it returns, an example implementation that parses), and has an implementation among the
built-in plugins."""

from __future__ import annotations

import ast
import inspect
import textwrap
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


def example_of(doc: str) -> str:
    """The indented block after ``Example::`` in ``doc``, dedented ('' when there is none)."""
    _, found, after = doc.partition("Example::\n")
    block = []
    for line in after.splitlines()[1:] if found else []:
        if line.strip() and not line.startswith(" " * 8):
            break
        block.append(line)
    return textwrap.dedent("\n".join(block))


@pytest.mark.parametrize("name", HOOKS)
def test_each_hook_docstring_has_params_returns_and_an_example(name: str) -> None:
    spec = getattr(hookspecs, name)
    doc = inspect.getdoc(spec) or ""
    for param in inspect.signature(spec).parameters:
        assert f":param {param}:" in doc, f"{name}'s docstring does not describe {param}"
    assert ":returns:" in doc, f"{name}'s docstring does not say what it returns"
    example = example_of(spec.__doc__ or "")
    assert example, f"{name}'s docstring has no Example:: block"
    implemented = [
        node.name
        for node in ast.walk(ast.parse(example))
        if isinstance(node, ast.FunctionDef)
        and any(isinstance(d, ast.Name) and d.id == "hookimpl" for d in node.decorator_list)
    ]
    assert name in implemented, f"{name}'s example does not implement it with @hookimpl"


def test_the_example_extractor_sees_a_missing_example() -> None:
    assert example_of("Summary.\n\n    :returns: x\n") == ""
    assert "def f" in example_of("S.\n\n    Example::\n\n        def f(): ...\n\n    After.\n")


#: Hooks for outside plugins only: the built-in envs have no secret-scan false positives.
OUTSIDE_ONLY = {"openenv_release_allowed_secrets"}


@pytest.mark.parametrize("name", [h for h in HOOKS if h not in OUTSIDE_ONLY])
def test_each_hook_has_a_builtin_implementation(name: str) -> None:
    pm = get_plugin_manager(entry_points=False, disabled=())
    assert getattr(pm.hook, name).get_hookimpls(), f"no built-in plugin implements {name}"
