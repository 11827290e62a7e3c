"""OpenEnv lines of pip requirements files, read as pip reads them, and pinned in place."""

from __future__ import annotations

import re
from collections.abc import Iterator

from releaselib.edit.requirement import (
    CONSTRAINT_DROPPED,
    EDITABLE,
    names_openenv,
    rewrite_at,
    why_pinned,
)
from releaselib.errors import StageError
from releaselib.records import Change

_HASH_OPTION = re.compile(r"[ \t]+--hash[= ]\S+")


_INCLUDE_OPTIONS = frozenset({"-r", "--requirement", "-c", "--constraint"})


def requirements_specs(text: str) -> list[tuple[int, str]]:
    """(line, spec) of each OpenEnv requirement of a requirements file (editable ones too)."""
    found = []
    for number, _, joined in _logical_lines(text.split("\n")):
        start, end = requirement_span(joined)
        spec = joined[start:end]
        editable = EDITABLE.fullmatch(spec)
        spec = editable.group("value") if editable is not None else spec
        if spec and not spec.startswith("-") and names_openenv(spec):
            found.append((number, spec))
    return found


def rewrite_requirements_txt(
    text: str, *, path: str, dist: str, ref: str, constraints: bool = False
) -> tuple[str, list[Change]]:
    """Pin OpenEnv lines of a requirements file; comments, options and line endings stay.

    Lines continued with a backslash are read joined, as pip reads them; a rewritten one
    becomes a single line without its ``--hash`` options. When another line keeps a hash (or
    the file says ``--require-hashes``), pip would refuse the unhashable git URL: StageError
    naming the line. An editable OpenEnv git URL
    (``-e git+...``) becomes the pinned, non-editable requirement. In a constraints file
    (``constraints=True``, a file read only through ``-c``) an OpenEnv line is removed: pip
    refuses URLs and extras in constraints, and the requirement itself is pinned.
    """
    lines = text.split("\n")
    out: list[str] = []
    changes: list[Change] = []
    hashed: list[int] = []  # lines that keep pip in hash-checking mode
    for number, group, joined in _logical_lines(lines):
        start, end = requirement_span(joined)
        spec = joined[start:end]
        editable = EDITABLE.fullmatch(spec)
        if editable is not None:
            spec = editable.group("value")
        if not spec or spec.startswith("-"):
            hashed += [number] if _REQUIRE_HASHES.match(joined) else []
            out += group
            continue
        new = rewrite_at(spec, path, number, dist=dist, ref=ref)
        if new is None:
            hashed += [number] if _HASH_OPTION.search(joined[end:]) else []
            out += group
            continue
        before = joined[start:end]
        ending = "\r" if group[-1].endswith("\r") else ""
        if constraints:
            changes.append(Change(path, number, before, "", CONSTRAINT_DROPPED))
            continue
        rest = joined[end:].rstrip("\r")
        kept = _HASH_OPTION.sub("", rest)
        mark = _PIN_MARK.search(kept)
        kept = kept[: mark.start()] if mark else kept
        out.append(joined[:start] + new + kept.rstrip() + ending)
        why = why_pinned(spec, ref, tool_pin=mark is not None)
        if editable is not None:
            why += "; installed non-editable"
        if kept != rest:
            why += "; its --hash options (for a PyPI file) dropped"
        changes.append(Change(path, number, before, new, why))
    if hashed and changes and not constraints:
        raise StageError(
            f"{path}:{changes[0].line}: pins {changes[0].before!r} to the release's git URL, "
            f"which pip cannot hash-check, and line {hashed[0]} puts pip in hash-checking mode "
            "(it refuses a mix of hashed and unhashed requirements)",
            remedy="install OpenEnv from a separate requirements file without --hash, or "
            "generate this one without hashes",
        )
    return "\n".join(out), changes


_REQUIRE_HASHES = re.compile(r"\s*--require-hashes\b")


def hash_mode_line(text: str) -> int | None:
    """The first line of a requirements text that puts pip in hash-checking mode (a
    ``--hash`` option, ``--require-hashes``), if any."""
    for number, _, joined in _logical_lines(text.split("\n")):
        _, end = requirement_span(joined)
        if _REQUIRE_HASHES.match(joined) or _HASH_OPTION.search(joined[end:]):
            return number
    return None


#: The comment ``pin`` puts after a requirements-file line it pinned.
_PIN_MARK = re.compile(r"\s*# openenv-release pin \(was .+\)\s*$")


def _logical_lines(lines: list[str]) -> Iterator[tuple[int, list[str], str]]:
    """(first line number, physical lines, joined text) of each line pip reads: a line ending
    in a backslash continues on the next, without the backslash, as pip joins them."""
    group: list[str] = []
    first = 1
    for number, line in enumerate(lines, start=1):
        body = line.rstrip("\r")
        if not group:
            first = number
        group.append(line)
        if not (body.endswith("\\") and not body.lstrip().startswith("#")) or number == len(lines):
            joined = "".join(g.rstrip("\r")[:-1] for g in group[:-1]) + group[-1]
            yield first, group, joined
            group = []


def includes(text: str) -> list[tuple[str, str]]:
    """(option, file) for each file a requirements text reads: option is ``-r`` or ``-c``."""
    return [(option, file) for _, option, file in include_lines(text)]


def include_lines(text: str) -> list[tuple[int, str, str]]:
    """(line, option, file) for each file a requirements text reads (``-r`` or ``-c``)."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        words = re.split(r"(?:^|\s)#", line, maxsplit=1)[0].split()
        for i, word in enumerate(words):
            name, eq, value = word.partition("=")
            if name in _INCLUDE_OPTIONS and eq:
                found.append((number, _short(name), value))
            elif word in _INCLUDE_OPTIONS and i + 1 < len(words):
                found.append((number, _short(word), words[i + 1]))
            elif word.startswith(("-r", "-c")) and len(word) > 2 and word[2] != "-":
                found.append((number, word[:2], word[2:]))
    return found


def _short(option: str) -> str:
    return "-c" if option in ("-c", "--constraint") else "-r"


def included_files(text: str) -> list[str]:
    """The files a requirements text reads through ``-r``/``-c`` (and the long forms)."""
    return [file for _, file in includes(text)]


def requirement_span(line: str) -> tuple[int, int]:
    """Start and end of the requirement in a requirements-file line.

    The requirement ends at a `` #`` comment or at per-requirement options (`` --hash=...``).
    """
    body = re.split(r"(?:^|\s)#|\s--", line.rstrip("\r"), maxsplit=1)[0]
    start = len(body) - len(body.lstrip())
    return start, len(body.rstrip())
