"""OpenEnv entries of a pipenv ``Pipfile``, pinned through tomlkit, and its stale lock refused.

A Pipfile entry on OpenEnv (``openenv-core = ">=0.1"`` or a table) becomes pipenv's git form at
the release's ref, ``<dist> = {git = "https://github.com/huggingface/OpenEnv.git", ref = <ref>,
extras = ["core", ...]}``, keeping its extras and markers. A ``Pipfile.lock`` that locks OpenEnv
elsewhere cannot be regenerated here (pipenv and the network are not at hand): a build that runs
pipenv would install the locked release or refuse the lock, so the env fails naming it.
"""

from __future__ import annotations

import json

import tomlkit
from packaging.utils import canonicalize_name

from releaselib.edit.pyproject_deps import line_of, parse_toml
from releaselib.edit.requirement import OPENENV_DISTS, OPENENV_GIT, REMEDY
from releaselib.errors import StageError
from releaselib.records import Change

#: Pipfile tables that are not package categories.
_NOT_PACKAGES = frozenset({"source", "requires", "pipenv", "scripts"})


#: Keys of a Pipfile entry that say where the package comes from (replaced by the pin).
_SOURCE_KEYS = frozenset(
    {"version", "git", "ref", "path", "file", "editable", "index", "subdirectory"}
)


def _target(ref: str) -> dict[str, str]:
    return {"git": OPENENV_GIT.removeprefix("git+"), "ref": ref}


def rewrite_pipfile(text: str, *, path: str, dist: str, ref: str) -> tuple[str, list[Change]]:
    """Pin every OpenEnv entry of every package category (``[packages]``, ``[dev-packages]``,
    custom ones) to the OpenEnv repository at ``ref``; other entries and comments stay."""
    doc = parse_toml(text, path)
    changes = []
    for category, table in list(doc.items()):
        if category in _NOT_PACKAGES or not isinstance(table, dict):
            continue
        for key in [k for k in table if canonicalize_name(k) in OPENENV_DISTS]:
            value = table[key]
            fields = value if isinstance(value, dict) else {}
            kept = {k: v for k, v in fields.items() if k not in _SOURCE_KEYS}
            extras = [str(e) for e in kept.pop("extras", [])]
            current = {k: fields.get(k) for k in ("git", "ref")}
            if key == dist and current == _target(ref) and "core" in extras:
                continue
            entry = tomlkit.inline_table()
            entry.update(_target(ref))
            entry["extras"] = ["core", *(e for e in extras if e != "core")]
            entry.update(kept)
            before = f"{key} = {value.as_string().strip()}"
            del table[key]
            table[dist] = entry
            after = f"{dist} = {entry.as_string().strip()}"
            why = f"a Pipfile entry would install a PyPI release; pinned to {ref}"
            changes.append(Change(path, line_of(text, before, 1), before, after, why))
    return (tomlkit.dumps(doc) if changes else text), changes


def git_entry(text: str, path: str) -> str | None:
    """The first entry of a Pipfile that pipenv installs with git (``{git = ...}``), if any."""
    doc = parse_toml(text, path)
    for category, table in doc.items():
        if category in _NOT_PACKAGES or not isinstance(table, dict):
            continue
        for key, value in table.items():
            if isinstance(value, dict) and "git" in value:
                return f"Pipfile entry {key} (git)"
    return None


def check_pipfile_lock(text: str, *, path: str, ref: str) -> None:
    """StageError naming ``path:line`` when a ``Pipfile.lock`` locks OpenEnv other than at
    ``ref`` (its Pipfile is pinned, so the lock is stale); a lock that is not JSON too."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StageError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})", remedy=REMEDY) from exc
    sections = data.items() if isinstance(data, dict) else []
    for section, entries in sections:
        if section == "_meta" or not isinstance(entries, dict):
            continue
        for name, entry in entries.items():
            if canonicalize_name(name) not in OPENENV_DISTS:
                continue
            fields = entry if isinstance(entry, dict) else {}
            git = str(fields.get("git", "")).removesuffix(".git").lower()
            if git == _target(ref)["git"].removesuffix(".git").lower() and fields.get("ref") == ref:
                continue
            locked = fields.get("version") or fields.get("ref") or "an unpinned release"
            raise StageError(
                f"{path}:{line_of(text, json.dumps(name), 1) or 1}: locks {name} {locked}, "
                f"not OpenEnv at {ref}; pipenv would install it or refuse the lock staging "
                "cannot regenerate",
                remedy="delete Pipfile.lock from the env (pipenv then locks the pinned Pipfile "
                "in the build), or install from requirements.txt",
            )
