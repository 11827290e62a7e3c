"""OpenEnv requirements staging checks but does not rewrite: conda envs, setup.py, setup.cfg,
and a pyproject's tables other than those ``pyproject_deps`` pins."""

from __future__ import annotations

import configparser
import re
import tomllib
from collections.abc import Iterator
from typing import Any

from packaging.utils import canonicalize_name

from releaselib.edit.requirement import (
    OPENENV_DISTS,
    REMEDY,
    names_openenv,
    pinned_requirement,
    rewrite_at,
)
from releaselib.errors import StageError


def conda_specs(text: str, path: str) -> list[str]:
    """The OpenEnv requirements in the ``pip:`` sections of a conda ``environment.yml``."""
    import yaml  # lazily: only envs with a conda environment need it

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise StageError(f"{path}: not valid YAML ({exc})", remedy=REMEDY) from exc
    entries = data.get("dependencies", []) if isinstance(data, dict) else []
    pips = [e["pip"] for e in entries if isinstance(e, dict) and isinstance(e.get("pip"), list)]
    return [str(s) for pip in pips for s in pip if isinstance(s, str) and names_openenv(s)]


def check_conda_environment(text: str, *, path: str, dist: str, ref: str) -> None:
    """StageError naming the file and the spec when a conda environment's ``pip:`` section
    names OpenEnv other than pinned to ``ref``: no comment-keeping YAML editor is installed
    (ruamel.yaml), so staging cannot rewrite it safely."""
    for spec in conda_specs(text, path):
        if rewrite_at(spec, path, None, dist=dist, ref=ref) is not None:
            raise StageError(
                f"{path}: its pip section names {spec!r}, which staging cannot rewrite "
                "(no comment-keeping YAML editor)",
                remedy=f"write {pinned_requirement(dist, ref)!r} there, or move it to "
                "requirements.txt",
            )


def setup_requirement(path: str, text: str) -> str | None:
    """The OpenEnv requirement a ``setup.py``/``setup.cfg`` names, if any: staging does not edit
    Python code, so such an env cannot be pinned and fails."""
    if path.endswith("setup.cfg"):
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(text)
        except configparser.Error:
            return None
        lines = parser.get("options", "install_requires", fallback="").splitlines()
    else:
        listed = re.split(r"[\])]", text.partition("install_requires")[2], maxsplit=1)[0]
        lines = re.findall(r"""["']([^"'\n]+)["']""", listed)
    return next((line.strip() for line in lines if names_openenv(line.strip())), None)


def check_pyproject(text: str, *, path: str, dist: str, ref: str) -> None:
    """StageError naming ``path:line`` for the first OpenEnv dependency a rewritten pyproject
    still holds unpinned: a table or array ``pyproject_deps`` does not rewrite (another tool's),
    which the build's installer would read and resolve to another OpenEnv."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return  # the rewrite reported it
    own = canonicalize_name(str(doc.get("project", {}).get("name", "")))
    for where, shown, is_key in _openenv_entries(doc, []):
        if is_key:
            pinned = ref in shown
        else:
            pinned = rewrite_at(shown, path, None, dist=dist, ref=ref) is None
        if pinned or canonicalize_name(re.split(r"[\s=<>!~\[;@]", shown, maxsplit=1)[0]) == own:
            continue
        raise StageError(
            f"{path}:{_line_of(text, shown)}: {where} names {shown!r}, an OpenEnv dependency "
            "staging does not rewrite, so the build would install another OpenEnv",
            remedy=f"declare {pinned_requirement(dist, ref)!r} in [project] dependencies "
            "(staging pins it there), or pin it yourself",
        )


def _openenv_entries(node: Any, keys: list[str]) -> Iterator[tuple[str, str, bool]]:
    """(table, entry, whether a key) for each OpenEnv entry of a TOML document: a key named
    after an OpenEnv distribution (``openenv-core = "^0.2"``), or a string in an array naming
    one."""
    if isinstance(node, dict):
        for key, value in node.items():
            if canonicalize_name(key) in OPENENV_DISTS:
                yield f"[{'.'.join(keys)}]", f"{key} = {value!r}", True
            else:
                yield from _openenv_entries(value, [*keys, key])
    elif isinstance(node, list):
        for item in node:
            if isinstance(item, str) and names_openenv(item):
                yield f"[{'.'.join(keys[:-1])}] {keys[-1] if keys else ''}".strip(), item, False
            else:
                yield from _openenv_entries(item, keys)


def _line_of(text: str, shown: str) -> int:
    needle = shown.split(" = ")[0] if " = " in shown else shown
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1
