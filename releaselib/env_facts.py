"""What an env's own files say about it: the port it serves on, its client class, its package."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import yaml

from releaselib.dockerfile_syntax.words import expand
from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.edit.front_matter import (
    Malformed,
    as_port,
    parse_front_matter,
    show_value,
    strip_bom,
    yaml_problem,
)
from releaselib.errors import StageError

DEFAULT_APP_PORT = 8000


CLIENT_BASES = frozenset({"EnvClient", "HTTPEnvClient", "MCPToolClient", "GenericEnvClient"})


# The Hub's opening line of a front matter block (see REGEX_YAML_BLOCK).
# ``--port 8004``/``--port=8004`` (uvicorn), ``-b 0.0.0.0:7860``/``--bind=:7860`` (gunicorn), in
# an ENTRYPOINT + CMD whose ``$VAR``/``${VAR:-N}`` are expanded from the stage's ENV first.
_PORT_OPTION = re.compile(r"(?:--port[= ]|(?:-b|--bind)[= ]\S*:)(\d+)\b")


def read_app_port(env_dir: Path, shown: str | None = None) -> int:
    """The port the env serves on: ``openenv.yaml``'s ``port``, else the README front matter's
    ``app_port``, else the ``--port`` of the Dockerfile's CMD, else 8000. Errors name the env
    dir as ``shown`` (e.g. ``envs/echo_env`` for a staged copy).

    Every source that names a port must name the same one: a StageError names the two that
    disagree (the card would send the Hub to a port nothing listens on), or a README app_port
    that is not a port.
    """
    shown = shown or str(env_dir)
    found = [
        (where, port)
        for where, port in (
            ("openenv.yaml port", _yaml_port(env_dir, shown)),
            ("README.md app_port", _readme_port(env_dir, shown)),
            ("Dockerfile CMD --port", _cmd_port(env_dir)),
        )
        if port is not None
    ]
    for where, port in found[1:]:
        if port != found[0][1]:
            raise StageError(
                f"{shown}: {found[0][0]} {found[0][1]} disagrees with {where} {port}",
                remedy="make the env name one port everywhere",
            )
    return found[0][1] if found else DEFAULT_APP_PORT


def _yaml_port(env_dir: Path, shown: str) -> int | None:
    if not (env_dir / "openenv.yaml").is_file():
        return None
    path = f"{shown}/openenv.yaml"
    try:
        data = yaml.safe_load((env_dir / "openenv.yaml").read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        line, problem = yaml_problem(exc)
        message = f"{path}:{line + 1}: not valid YAML: {problem}"
        raise StageError(message, remedy="fix openenv.yaml") from exc
    if data is None:
        return None
    if not isinstance(data, dict):
        raise StageError(f"{path}: not a YAML mapping", remedy="fix openenv.yaml")
    port = data.get("port")
    if port is not None and as_port(port) is None:
        raise StageError(
            f"{path}: port must be an integer 1-65535, got {port!r}", remedy="fix openenv.yaml"
        )
    return as_port(port)


def _readme_port(env_dir: Path, shown: str) -> int | None:
    """The README front matter's app_port; StageError when it is there but not a port."""
    path = env_dir / "README.md"
    try:
        front = parse_front_matter(strip_bom(path.read_bytes().decode("utf-8")))
    except (OSError, UnicodeDecodeError, Malformed):
        return None
    value = front.data.get("app_port") if front is not None else None
    if value is not None and as_port(value) is None:
        raise StageError(
            f"{shown}/README.md: app_port {show_value(value)} is not a port (an integer 1-65535)",
            remedy="fix app_port in the README front matter",
        )
    return as_port(value)


def _cmd_port(env_dir: Path) -> int | None:
    """The port given in the env Dockerfile's final ENTRYPOINT + CMD, its variables expanded
    from the stage's ENV (``--port $PORT`` with ``ENV PORT=7860`` is 7860)."""
    for path in (env_dir / "server" / "Dockerfile", env_dir / "Dockerfile"):
        if path.is_file():
            break
    else:
        return None
    try:
        df = Dockerfile.parse(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError, StageError):
        return None
    entry = [i for i in df.stage_instructions() if i.cmd == "ENTRYPOINT"]
    cmd = df.cmd()
    words = [*(entry[-1].value if entry else ()), *(cmd.argv if cmd is not None else ())]
    env = df.stage_env()
    match = _PORT_OPTION.search(" ".join(expand(w, env) for w in words))
    return as_port(int(match.group(1))) if match else None


def find_client_class(env_dir: Path) -> str | None:
    """The env's client class, read from its ``client.py`` or ``__init__.py`` exports with ast.

    A client class is one whose bases name ``EnvClient``, ``HTTPEnvClient``, ``MCPToolClient``,
    ``GenericEnvClient`` or another client class of the same file. Nothing is imported.
    """
    exported = dict(_relative_imports(env_dir / "__init__.py"))
    in_client = _client_classes(env_dir / "client.py")
    if in_client:
        return _preferred(in_client, set(exported))
    in_init = _client_classes(env_dir / "__init__.py")
    if in_init:
        return _preferred(in_init, set())
    for name, module in exported.items():
        if name in _client_classes(_module_path(env_dir, module)):
            return name
    return None


def package_name(env_dir: Path) -> str | None:
    """The import package of the env: the ``[tool.setuptools] package-dir`` entry for ``.``."""
    path = env_dir / "pyproject.toml"
    if not path.is_file():
        return None
    try:
        project = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError:
        return None
    package_dir = project.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    roots = [name for name, folder in package_dir.items() if folder in {".", "./", ""}]
    return roots[0] if roots else None


# -- client class discovery -----------------------------------------------------------------


def _parse_python(path: Path) -> ast.Module | None:
    if not path.is_file():
        return None
    try:
        return ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError):
        return None


def _client_classes(path: Path) -> list[str]:
    """Client classes defined at the top level of ``path``, in definition order."""
    tree = _parse_python(path)
    if tree is None:
        return []
    known = set(CLIENT_BASES)
    found: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(_base_name(b) in known for b in node.bases):
            found.append(node.name)
            known.add(node.name)
    return found


def _base_name(node: ast.expr) -> str | None:
    """``EnvClient`` for ``EnvClient``, ``core.EnvClient`` and ``EnvClient[A, O, S]``."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _preferred(classes: list[str], exported: set[str]) -> str:
    """An exported class first, then a public one, then the first defined."""
    return min(classes, key=lambda name: (name not in exported, name.startswith("_")))


def _relative_imports(init: Path) -> Iterator[tuple[str, str]]:
    """(name, module) for each ``from .module import name`` in ``__init__.py``."""
    tree = _parse_python(init)
    for node in tree.body if tree else []:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                yield alias.name, node.module


def _module_path(env_dir: Path, module: str) -> Path:
    base = env_dir.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
