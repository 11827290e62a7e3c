"""OpenEnv dependencies of a pyproject (PEP 621, groups, uv, poetry), pinned through tomlkit."""

from __future__ import annotations

import functools
import re
import tomllib
from collections import Counter
from collections.abc import Iterator
from typing import Any

import tomlkit
from packaging.utils import canonicalize_name
from tomlkit.exceptions import ParseError
from tomlkit.items import Array, String, StringType

from releaselib.edit.requirement import (
    CONSTRAINT_DROPPED,
    LEADING_NAME,
    OPENENV_DISTS,
    OPENENV_GIT,
    REMEDY,
    names_openenv,
    rewrite_at,
    why_pinned,
)
from releaselib.errors import StageError
from releaselib.records import Change

#: Where ``pin`` records the requirement strings it wrote, so later steps recognise them.
TOOL_TABLE = "openenv-release"


_SOURCE_KINDS = ("path", "editable", "git", "rev", "tag", "branch", "url", "index", "workspace")


def find_openenv_requirements(text: str, *, path: str = "pyproject.toml") -> list[str]:
    """Every OpenEnv requirement string in a pyproject's dependency lists, pinned or not."""
    doc = read_toml(text, path)
    own = own_name(doc)
    return [
        str(item)
        for array in requirement_arrays(doc)
        for item in array
        if isinstance(item, str) and names_openenv(item) and not is_self(item, own)
    ]


def rewrite_pyproject(text: str, *, path: str, dist: str, ref: str) -> tuple[str, list[Change]]:
    """Pin OpenEnv dependencies in a pyproject and point its OpenEnv uv sources at ``ref``."""
    doc = parse_toml(text, path)
    own = own_name(doc)
    written = tool_pins(doc)
    changes: list[Change] = []
    seen: Counter[str] = Counter()
    for array in requirement_arrays(doc):
        for index, item in enumerate(array):
            if not isinstance(item, String) or is_self(str(item), own):
                continue
            spec = str(item)
            seen[spec] += 1
            line = line_of(text, spec, seen[spec])
            new = rewrite_at(spec, path, line, dist=dist, ref=ref)
            if new is not None:
                array[index] = string_like(item, new)
                why = why_pinned(spec, ref, tool_pin=spec in written)
                changes.append(Change(path, line, spec, new, why))
    changes += _pin_sources(doc, text, path, ref)
    changes += _drop_constraints(doc, text, path, ref)
    changes += _pin_poetry(doc, text, path, ref)
    return (tomlkit.dumps(doc) if changes else text), changes


def source_specs(text: str, path: str) -> list[tuple[int | None, str, str | None]]:
    """(line, entry, ref or None) of each OpenEnv ``[tool.uv.sources]`` entry of a pyproject:
    the ref when it is the OpenEnv repository at a fixed rev."""
    sources = read_toml(text, path).get("tool", {}).get("uv", {}).get("sources", {})
    if not any(canonicalize_name(k) in OPENENV_DISTS for k in sources):
        return []
    doc = parse_toml(text, path, read_only=True)  # tomlkit: each entry as written
    sources = doc.get("tool", {}).get("uv", {}).get("sources", {})
    found = []
    for key in [k for k in sources if canonicalize_name(k) in OPENENV_DISTS]:
        value = sources[key]
        for entry in value if isinstance(value, list) else [value]:
            git = isinstance(entry, dict) and entry.get("git") == OPENENV_GIT.removeprefix("git+")
            rev = entry.get("rev") if git else None
            shown = f"{key} = {entry.as_string().strip() if hasattr(entry, 'as_string') else entry}"
            found.append((_source_line(text, key), shown, rev if isinstance(rev, str) else None))
    return found


@functools.lru_cache(maxsize=16)
def _shared_document(text: str) -> Any:
    return tomlkit.parse(text)


def parse_toml(text: str, path: str, *, read_only: bool = False) -> Any:
    """The pyproject as a tomlkit document; StageError naming ``path`` if it is not valid TOML
    or its dependency lists are not lists of requirement strings. ``read_only``: one document
    per text, shared by the readers that need tomlkit's view of it, which must never change
    it (the others use ``read_toml``)."""
    try:
        doc = _shared_document(text) if read_only else tomlkit.parse(text)
    except ParseError as exc:
        raise StageError(f"{path}:{exc.line}: not valid TOML ({exc})", remedy=REMEDY) from exc
    _check_lists(doc, path)
    return doc


def read_toml(text: str, path: str) -> Any:
    """The pyproject as plain data, checked as ``parse_toml`` checks it: a read needs no
    tomlkit document, and stdlib ``tomllib`` is many times faster. Text tomllib refuses is
    parsed by ``parse_toml``, so what is valid, and the error naming ``path``, stay tomlkit's."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return parse_toml(text, path, read_only=True)
    _check_lists(doc, path)
    return doc


def _check_lists(doc: Any, path: str) -> None:
    """StageError naming ``path`` unless the dependency lists are lists of requirement strings."""
    project = _table(doc, "project", path)
    _requirements(project.get("dependencies"), "project.dependencies", path)
    for key, value in _table(project, "optional-dependencies", path, "project.").items():
        _requirements(value, f"project.optional-dependencies.{key}", path)
    for key, value in _table(doc, "dependency-groups", path).items():
        _requirements(value, f"dependency-groups.{key}", path, groups=True)


def _table(container: Any, key: str, path: str, prefix: str = "") -> Any:
    value = container.get(key, {})
    if not isinstance(value, dict):
        raise StageError(f"{path}: {prefix}{key} is not a table", remedy=REMEDY)
    return value


def _requirements(value: Any, key: str, path: str, *, groups: bool = False) -> None:
    """StageError unless ``value`` is absent or a list of strings (or include-group tables)."""
    allowed = (str, dict) if groups else str
    if value is not None and not (
        isinstance(value, list) and all(isinstance(item, allowed) for item in value)
    ):
        raise StageError(f"{path}: {key} must be a list of requirement strings", remedy=REMEDY)


def own_name(doc: Any) -> str | None:
    name = doc.get("project", {}).get("name")
    return canonicalize_name(name) if isinstance(name, str) else None


def is_self(spec: str, own: str | None) -> bool:
    """True if ``spec`` names the project itself (an extra of its own, like ``openenv[cli]``)."""
    match = LEADING_NAME.match(spec)
    return own is not None and match is not None and canonicalize_name(match.group(1)) == own


def requirement_arrays(doc: Any) -> Iterator[list[Any]]:
    """project.dependencies, each optional-dependencies list, each dependency group and uv's
    ``dev-dependencies`` and ``override-dependencies`` (tomlkit Arrays in a tomlkit document)."""
    project = doc.get("project", {})
    uv = _uv_table(doc)
    candidates = [project.get("dependencies")]
    candidates += project.get("optional-dependencies", {}).values()
    candidates += doc.get("dependency-groups", {}).values()
    candidates += [uv.get("dev-dependencies"), uv.get("override-dependencies")]
    yield from (array for array in candidates if isinstance(array, list))


def _uv_table(doc: Any) -> Any:
    tool = doc.get("tool", {})
    uv = tool.get("uv", {}) if isinstance(tool, dict) else {}
    return uv if isinstance(uv, dict) else {}


def _drop_constraints(doc: Any, text: str, path: str, ref: str) -> list[Change]:
    """Remove OpenEnv entries of ``[tool.uv] constraint-dependencies``: the requirement itself
    is pinned to ``ref``, and a constraint at a PyPI version would contradict it."""
    array = _uv_table(doc).get("constraint-dependencies")
    if not isinstance(array, Array):
        return []
    changes = []
    for index in reversed(range(len(array))):
        spec = array[index]
        if isinstance(spec, str) and names_openenv(spec):
            changes.append(Change(path, line_of(text, spec, 1), str(spec), "", CONSTRAINT_DROPPED))
            del array[index]
    return changes[::-1]


def _pin_poetry(doc: Any, text: str, path: str, ref: str) -> list[Change]:
    """Point OpenEnv entries of ``[tool.poetry.dependencies]`` (and poetry groups) at ``ref``."""
    poetry = doc.get("tool", {}).get("poetry", {})
    if not isinstance(poetry, dict):
        return []
    tables = [poetry.get("dependencies")]
    tables += [
        g.get("dependencies") for g in poetry.get("group", {}).values() if isinstance(g, dict)
    ]
    target = {"git": OPENENV_GIT.removeprefix("git+"), "rev": ref}
    changes = []
    for table in (t for t in tables if isinstance(t, dict)):
        for key in [k for k in table if canonicalize_name(k) in OPENENV_DISTS]:
            value = table[key]
            current = (
                {k: v for k, v in value.items() if k in ("git", "rev")}
                if isinstance(value, dict)
                else {}
            )
            if current == target:
                continue
            before = f"{key} = {value.as_string().strip()}"
            extras = list(value.get("extras", [])) if isinstance(value, dict) else []
            entry = tomlkit.inline_table()
            entry.update({**target, "extras": ["core", *(e for e in extras if e != "core")]})
            table[key] = entry
            after = f"{key} = {entry.as_string().strip()}"
            why = f"a poetry dependency would install a PyPI release; pinned to {ref}"
            changes.append(Change(path, _source_line(text, key), before, after, why))
    return changes


def string_like(item: String, new: str) -> String:
    """A TOML string holding ``new``, in the quoting style of ``item`` where possible."""
    literal = item.type in (StringType.SLL, StringType.MLL) and "'" not in new
    return tomlkit.string(new, literal=literal)


def tool_pins(doc: Any) -> dict[str, str]:
    """Requirement strings ``pin`` wrote (``[tool.openenv-release] pins``) -> the release."""
    table = doc.get("tool", {}).get(TOOL_TABLE, {})
    entries = table.get("pins", []) if isinstance(table, dict) else []
    return {
        str(e["requirement"]): str(e.get("release", "?"))
        for e in entries
        if isinstance(e, dict) and isinstance(e.get("requirement"), str)
    }


def _pin_sources(doc: Any, text: str, path: str, ref: str) -> list[Change]:
    """Point every OpenEnv ``tool.uv.sources`` entry at the OpenEnv repository at ``ref``.

    uv prefers a source over the dependency string, so a git source at another rev, or a path to
    the OpenEnv checkout (which a Space does not have), would override the pinned requirement.
    """
    sources = doc.get("tool", {}).get("uv", {}).get("sources", {})
    changes = []
    for key in [k for k in sources if canonicalize_name(k) in OPENENV_DISTS]:
        value = sources[key]
        entries = value if isinstance(value, list) else [value]
        if not all(isinstance(e, dict) for e in entries):
            continue
        before = f"{key} = {value.as_string().strip()}"
        kinds = {"path" if "path" in e else "git" if "git" in e else "other" for e in entries}
        pinned = [_git_source(e, ref) for e in entries]
        if isinstance(value, list):
            array = tomlkit.array()
            array.extend(pinned)
            sources[key] = array
        else:
            sources[key] = pinned[0]
        kind = kinds.pop() if len(kinds) == 1 else "other"
        after = f"{key} = {sources[key].as_string().strip()}"
        if after != before:
            why = {
                "path": "a path source points at the OpenEnv checkout, absent from the Space",
                "git": "a git source elsewhere would override the pinned requirement",
            }.get(kind, "a source would override the pinned requirement")
            line = _source_line(text, key)
            changes.append(Change(path, line, before, after, f"{why}; pinned to {ref}"))
    return changes


def _git_source(entry: Any, ref: str) -> Any:
    """An OpenEnv uv source at ``ref``: ``entry`` itself when it already is one, else a new
    inline table that keeps only the entry's selectors (marker, extra, group)."""
    target = {"git": OPENENV_GIT.removeprefix("git+"), "rev": ref}
    if {k: v for k, v in entry.items() if k in _SOURCE_KINDS} == target:
        return entry
    table = tomlkit.inline_table()
    table.update({k: v for k, v in entry.items() if k not in _SOURCE_KINDS})
    table.update(target)
    return table


def _source_line(text: str, key: str) -> int | None:
    pattern = re.compile(rf"""^\s*["']?{re.escape(key)}["']?\s*=""")
    return next(
        (n for n, line in enumerate(text.splitlines(), start=1) if pattern.match(line)), None
    )


def line_of(text: str, needle: str, nth: int) -> int | None:
    """The line of the ``nth`` occurrence of ``needle`` outside a comment (best effort)."""
    found = 0
    for number, line in enumerate(text.splitlines(), start=1):
        at = line.find(needle)
        if at >= 0 and "#" not in line[:at]:
            found += 1
            if found == nth:
                return number
    return None
