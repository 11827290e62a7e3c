"""Scaffold a built-in env plugin: ``env_plugins/<env>.py`` and its BUILTIN_PLUGINS entry.

The module is rendered from ``releaselib/templates/env_plugin.py.j2`` in the shape every
built-in env plugin has (``ENV``, a profile claiming it; per-env hooks start with
``if env != ENV: return ()``), which ``tests/env_plugins/test_builtin_plugins.py`` checks for
every module. The entry is spliced into the ``BUILTIN_PLUGINS`` tuple of
``env_plugins/__init__.py``, located with ``ast``, keeping the env modules after
``releaselib.stage.checks`` in sorted order. The env must be a directory under ``envs/`` of
the OpenEnv checkout given.
"""

from __future__ import annotations

import ast
import difflib
import keyword
from pathlib import Path

from releaselib.errors import UsageError
from releaselib.records import check_env_name
from releaselib.render import render

TUPLE = "BUILTIN_PLUGINS"
FIRST = "releaselib.stage.checks"
ENV_PREFIX = "env_plugins."


def new_plugin(project_root: Path, env: str, checkout: Path) -> list[Path]:
    """Write the plugin module for ``env``, an env of ``checkout``, and register it; returns the
    paths written."""
    check_plugin_name(env)
    check_env_in(checkout, env)
    init = project_root / "env_plugins" / "__init__.py"
    if not init.is_file():
        raise UsageError(
            f"{project_root} has no env_plugins/__init__.py",
            remedy="run from the openenv-release project root, or pass --root",
        )
    module = project_root / "env_plugins" / f"{env}.py"
    if module.exists():
        raise UsageError(f"{module} exists: {env} already has a plugin", remedy="edit that one")
    registered = register(init.read_text(encoding="utf-8"), f"env_plugins.{env}")
    module.write_text(render("env_plugin.py.j2", env=env), encoding="utf-8")
    init.write_text(registered, encoding="utf-8")
    return [module, init]


def check_plugin_name(env: str) -> str:
    """``env`` if it is a valid env name that can also be a module name, else UsageError."""
    try:
        check_env_name(env)
    except ValueError as exc:
        raise UsageError(str(exc), remedy="pass the env's directory name under envs/") from exc
    if not env.isidentifier() or keyword.iskeyword(env) or env.startswith("_"):
        raise UsageError(
            f"{env!r} cannot be a plugin module name (env_plugins/<env>.py is imported)",
            remedy="built-in plugins need env names that are Python identifiers; "
            "publish an outside plugin through the openenv_release entry point instead",
        )
    return env


def check_env_in(checkout: Path, env: str) -> None:
    """UsageError unless ``checkout`` has ``envs/<env>/``, naming the closest env names."""
    envs = checkout / "envs"
    if (envs / env).is_dir():
        return
    names = sorted(p.name for p in envs.iterdir() if p.is_dir()) if envs.is_dir() else []
    close = difflib.get_close_matches(env, names, n=3, cutoff=0.8)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise UsageError(
        f"{env}: {checkout} has no env directory envs/{env}{hint}",
        remedy="pass the env's directory name under envs/ (invoke envs lists them), or --repo "
        "the checkout that has it",
    )


def register(init_text: str, module: str) -> str:
    """``init_text`` with ``module`` added to its BUILTIN_PLUGINS tuple, sorted among the env
    modules (which follow the ``releaselib`` ones)."""
    elements = _builtin_tuple(init_text).elts
    names = [e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if len(names) != len(elements):
        raise UsageError(f"{TUPLE} holds something other than strings", remedy="list module names")
    if module in names:
        raise UsageError(f"{module} is already in {TUPLE}", remedy="edit the existing plugin")
    envs = [i for i, name in enumerate(names) if name.startswith(ENV_PREFIX)]
    later = [i for i in envs if names[i] > module]
    data = init_text.encode("utf-8")
    if later:  # before the first env module that sorts after it
        before = elements[later[0]]
        at = _offset(data, before.lineno, before.col_offset)
        insert = f'"{module}",\n{" " * before.col_offset}'.encode()
    else:  # after the last env module (or the last entry), and its comma
        after = elements[envs[-1] if envs else -1]
        at = _offset(data, after.end_lineno or after.lineno, after.end_col_offset or 0)
        comma = data[at : at + 1] == b","
        at += comma
        insert = f'{"" if comma else ","}\n{" " * after.col_offset}"{module}",'.encode()
    return (data[:at] + insert + data[at:]).decode("utf-8")


def _builtin_tuple(text: str) -> ast.Tuple:
    for node in ast.parse(text).body:
        targets: list[ast.expr]
        if isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        elif isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        else:
            continue
        named = any(isinstance(t, ast.Name) and t.id == TUPLE for t in targets)
        if named and isinstance(value, ast.Tuple) and value.elts:
            return value
    raise UsageError(
        f"env_plugins/__init__.py has no non-empty {TUPLE} tuple",
        remedy=f'define {TUPLE}: tuple[str, ...] = ("{FIRST}",)',
    )


def _offset(data: bytes, lineno: int, col: int) -> int:
    """The byte offset of ``(lineno, col)`` as ast reports them (1-based line, byte column)."""
    lines = data.splitlines(keepends=True)
    return sum(len(line) for line in lines[: lineno - 1]) + col
