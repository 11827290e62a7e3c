"""Pins written into a pyproject (through tomlkit) or a requirements file, and found again."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import tomlkit
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version
from tomlkit.items import String

from releaselib.edit import pyproject_deps, requirement, requirements_txt
from releaselib.edit.pyproject_deps import TOOL_TABLE
from releaselib.errors import PinError, StageError
from releaselib.publish.pin_bounds import (
    Rewriter,
    lift_requirement,
    lifts,
    pin_requirement,
    release_version,
)
from releaselib.records import Change

PINS_COMMENT = (
    "Pins written by `openenv-release pin` after failed releases; a later pin lifts them."
)


def pin_below(text: str, *, version: str, path: str) -> tuple[str, list[Change]]:
    """Make every OpenEnv requirement in a pyproject exclude ``version`` and later releases."""
    return _rewrite(text, path, release_version(version), pin_requirement)


def lift_pin(text: str, *, version: str, path: str) -> tuple[str, list[Change]]:
    """Remove the ``<X`` bounds that keep OpenEnv requirements below ``version``."""
    return _rewrite(text, path, release_version(version), lift_requirement)


def _rewrite(
    text: str, path: str, version: Version, rewriter: Rewriter
) -> tuple[str, list[Change]]:
    """Apply ``rewriter`` to every OpenEnv requirement of a pyproject, through tomlkit."""
    doc = pyproject_deps.parse_toml(text, path)
    own = pyproject_deps.own_name(doc)
    if rewriter is lift_requirement:
        rewriter = _restoring(_recorded_was(doc))
    changes: list[Change] = []
    seen: Counter[str] = Counter()
    for array in pyproject_deps.requirement_arrays(doc):
        for index, item in enumerate(array):
            if not isinstance(item, String) or pyproject_deps.is_self(str(item), own):
                continue
            spec = str(item)
            seen[spec] += 1
            line = pyproject_deps.line_of(text, spec, seen[spec])
            req = _openenv_requirement(spec, path, line)
            try:
                result = None if req is None else rewriter(spec, req, version)
            except PinError as exc:
                raise PinError(f"{path}:{line}: {exc.message}", remedy=exc.remedy) from None
            if result is not None:
                array[index] = pyproject_deps.string_like(item, result[0])
                changes.append(Change(path, line, spec, *result))
    if not changes:
        return text, changes
    marked = TOOL_TABLE in doc.get("tool", {})
    _record_pins(doc, changes, version, pinned=rewriter is pin_requirement)
    new = tomlkit.dumps(doc)
    if marked and TOOL_TABLE not in doc.get("tool", {}):  # the table is gone: and its gap
        new = re.sub(r"(\r?\n)(?:\r?\n)+\Z", r"\1", new)
    if "\r\n" in text and not re.search(r"(?<!\r)\n", text):  # lines tomlkit added get CRLF too
        new = re.sub(r"(?<!\r)\n", "\r\n", new)
    return new, changes


def _recorded_was(doc: Any) -> dict[str, str]:
    """Requirement strings ``pin`` wrote -> the spec each replaced (``was``)."""
    table = doc.get("tool", {}).get(TOOL_TABLE, {})
    entries = table.get("pins", []) if isinstance(table, dict) else []
    return {
        str(e["requirement"]): str(e["was"])
        for e in entries
        if isinstance(e, dict)
        and isinstance(e.get("requirement"), str)
        and isinstance(e.get("was"), str)
    }


def _restoring(was: dict[str, str]) -> Rewriter:
    """A lift that gives a recorded pin back the spec it replaced, else ``lift_requirement``."""

    def lift(spec: str, req: Requirement, version: Version) -> tuple[str, str] | None:
        if spec in was and _lifts_any(req, version):
            return was[spec], f"the env passed the {version} release; restored {was[spec]!r}"
        return lift_requirement(spec, req, version)

    return lift


def _lifts_any(req: Requirement, version: Version) -> bool:
    return any(lifts(s, version) for s in req.specifier)


def _record_pins(doc: Any, changes: list[Change], version: Version, *, pinned: bool) -> None:
    """Add what pin wrote to ``[tool.openenv-release] pins``, or drop the entries lifted."""
    tool = doc.get("tool")
    table = tool.get(TOOL_TABLE) if tool is not None else None
    if pinned:
        if tool is None:
            tool = doc["tool"] = tomlkit.table(is_super_table=True)
        if table is None:
            table = tomlkit.table()
            table.add(tomlkit.comment(PINS_COMMENT))
            table["pins"] = tomlkit.array().multiline(True)
            tool[TOOL_TABLE] = table
        pins: Any = table["pins"]
        for change in changes:
            entry = tomlkit.inline_table()
            entry.update(requirement=change.after, was=change.before, release=str(version))
            pins.append(entry)
        return
    if table is None or not isinstance(table.get("pins"), list):
        return
    lifted = {c.before for c in changes}
    table["pins"] = [e for e in table["pins"] if e.get("requirement") not in lifted]
    if not table["pins"]:
        del tool[TOOL_TABLE]
        if not tool:
            del doc["tool"]


def pin_requirements_txt(text: str, *, version: str, path: str) -> tuple[str, list[Change]]:
    """Pin every OpenEnv line of a requirements file below ``version``, each marked with a
    trailing ``# openenv-release pin (was SPEC)`` comment so a later lift restores it."""
    return _rewrite_txt(text, path, release_version(version), pin=True)


def lift_requirements_txt(text: str, *, version: str, path: str) -> tuple[str, list[Change]]:
    """Lift the pins of a requirements file: a marked line gets its recorded spec back."""
    return _rewrite_txt(text, path, release_version(version), pin=False)


_TXT_MARK = re.compile(r"\s*# openenv-release pin \(was (?P<was>.+)\)\s*$")


def _rewrite_txt(text: str, path: str, version: Version, *, pin: bool) -> tuple[str, list[Change]]:
    lines = text.split("\n")
    changes: list[Change] = []
    for number, line in enumerate(lines, start=1):
        body = line.rstrip("\r")
        ending = line[len(body) :]
        mark = _TXT_MARK.search(body)
        plain = body[: mark.start()] if mark else body
        start, end = requirements_txt.requirement_span(plain)
        spec = plain[start:end]
        if not spec or spec.startswith("-"):
            continue
        req = _openenv_requirement(spec, path, number)
        if req is None:
            continue
        if not pin and mark is not None and _lifts_any(req, version):
            was = mark.group("was")
            why = f"the env passed the {version} release; restored {was!r}"
            result: tuple[str, str] | None = (was, why)
        else:
            rewriter = pin_requirement if pin else lift_requirement
            try:
                result = rewriter(spec, req, version)
            except PinError as exc:
                raise PinError(f"{path}:{number}: {exc.message}", remedy=exc.remedy) from None
        if result is None:
            continue
        tail = plain[end:]
        if pin:
            tail += f"  # openenv-release pin (was {spec})"
        lines[number - 1] = plain[:start] + result[0] + tail + ending
        changes.append(Change(path, number, spec, *result))
    return "\n".join(lines), changes


def tool_written_pins(tree: Path, env: str) -> list[str]:
    """``file: requirement`` for each OpenEnv requirement in a staged tree (its root and
    ``envs/<env>/`` pyprojects) that is still a pin this tool wrote."""
    found = []
    for rel in ("pyproject.toml", f"envs/{env}/pyproject.toml"):
        file = tree / rel
        if not file.is_file():
            continue
        try:
            doc = pyproject_deps.parse_toml(file.read_bytes().decode("utf-8"), rel)
        except (UnicodeDecodeError, StageError):
            continue
        written = pyproject_deps.tool_pins(doc)
        for array in pyproject_deps.requirement_arrays(doc):
            found += [f"{rel}: {item}" for item in array if str(item) in written]
    return found


def _openenv_requirement(spec: str, path: str, line: int | None) -> Requirement | None:
    """The parsed requirement if ``spec`` is on OpenEnv; PinError naming the line if unparsable."""
    try:
        return requirement.parse_requirement(spec)
    except InvalidRequirement as exc:
        raise PinError(
            f"{path}:{line}: cannot parse OpenEnv requirement {spec!r} ({exc})",
            remedy="fix the requirement in the checkout, then pin again",
        ) from exc
