"""A README's front matter: parsed as the Hub reads it, and what the Hub would refuse in it."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeGuard

import yaml

#: huggingface_hub.repocard's REGEX_YAML_BLOCK, the Hub's split of a README (a test keeps the
#: two the same): importing that module loads all of HfApi, a fifth of staging's start-up.
REGEX_YAML_BLOCK = re.compile(
    r"^(\s*---(?:\r\n|\r|\n))([\S\s]*?)((?:\r\n|\r|\n)---[ \t]*(\r\n|\n|$))"
)

HUB_COLOURS = ("red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray")


DEFAULT_COLOURS = {"colorFrom": "blue", "colorTo": "green"}
SHORT_DESCRIPTION_MAX = 60


REMEDY = "fix the README front matter in the checkout"


_OPENING = re.compile(r"\s*---(?:\r\n|\r|\n|$)")


Problem = tuple[int | None, str]


class Malformed(Exception):
    """A front matter block the Hub cannot read: where and why."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


@dataclass(frozen=True)
class FrontMatter:
    """A parsed front matter block: its values, each top-level key's file line, the body."""

    data: dict[str, Any]
    lines: dict[str, int]
    body: str


def metadata_problems(text: str) -> list[Problem]:
    """What the Hub would refuse in this README's metadata, as (line or None, message)."""
    try:
        front = parse_front_matter(text)
    except Malformed as exc:
        return [(exc.line, exc.message)]
    if front is None:
        return [(1, "README has no front matter (a YAML block between '---' lines)")]
    return [problem for check in _CHECKS for problem in check(front)]


# -- front matter ---------------------------------------------------------------------------


def strip_bom(text: str) -> str:
    return text.removeprefix("\ufeff")


def parse_front_matter(text: str) -> FrontMatter | None:
    """Split ``text`` the way the Hub does; None when it has no front matter."""
    match = REGEX_YAML_BLOCK.search(text)
    if match is None:
        opening = _OPENING.match(text)
        if opening:
            line = opening.group(0).rstrip("\r\n").count("\n") + 1
            raise Malformed(line, "front matter is not terminated")
        return None
    first_line = match.group(1).count("\n") + 1
    node, data = _load_yaml(match.group(2), first_line)
    if data is None:
        return FrontMatter({}, {}, text[match.end() :])
    if not isinstance(data, dict) or not all(isinstance(key, str) for key in data):
        raise Malformed(first_line, "front matter is not a YAML mapping with string keys")
    lines = {key.value: first_line + key.start_mark.line for key, _ in node.value}
    return FrontMatter(data, lines, text[match.end() :])


def _load_yaml(block: str, first_line: int) -> tuple[Any, Any]:
    """The composed node (for line numbers) and the loaded value of one YAML block."""
    loader = yaml.SafeLoader(block)
    try:
        node = loader.get_single_node()
        return node, None if node is None else loader.construct_document(node)
    except yaml.YAMLError as exc:
        line, problem = yaml_problem(exc)
        raise Malformed(first_line + line, f"front matter is not valid YAML: {problem}") from exc
    finally:
        loader.dispose()


def yaml_problem(exc: yaml.YAMLError) -> tuple[int, str]:
    """The 0-based line and the one-line problem of a YAML error."""
    mark = getattr(exc, "problem_mark", None)
    return (mark.line if mark else 0), str(getattr(exc, "problem", None) or exc).strip()


def show_value(value: Any) -> str:
    return f"[{', '.join(map(str, value))}]" if isinstance(value, list) else str(value)


# -- what the Hub would refuse --------------------------------------------------------------


def _check_title(front: FrontMatter) -> Iterator[Problem]:
    title = front.data.get("title")
    if not isinstance(title, str) or not title.strip():
        yield front.lines.get("title"), "title is missing"


def _check_sdk(front: FrontMatter) -> Iterator[Problem]:
    sdk = front.data.get("sdk")
    if sdk != "docker":
        yield front.lines.get("sdk"), f"sdk must be docker, got {sdk!r}"


def _check_app_port(front: FrontMatter) -> Iterator[Problem]:
    if "app_port" not in front.data:
        yield None, "app_port is missing"
    elif not is_port(front.data["app_port"]):
        port = front.data["app_port"]
        yield front.lines["app_port"], f"app_port must be an integer 1-65535, got {port!r}"


def _check_colours(front: FrontMatter) -> Iterator[Problem]:
    for key in DEFAULT_COLOURS:
        if key in front.data and front.data[key] not in HUB_COLOURS:
            value = front.data[key]
            yield front.lines[key], f"{key} {value!r} is not one of {', '.join(HUB_COLOURS)}"


def _check_short_description(front: FrontMatter) -> Iterator[Problem]:
    text = front.data.get("short_description")
    if text is not None and (not isinstance(text, str) or len(text) > SHORT_DESCRIPTION_MAX):
        limit = SHORT_DESCRIPTION_MAX
        message = f"short_description must be a string of at most {limit} characters"
        yield front.lines["short_description"], message


def _check_tags(front: FrontMatter) -> Iterator[Problem]:
    tags = front.data.get("tags")
    if tags is not None and not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
        yield front.lines["tags"], "tags must be a list of strings"


_CHECKS: tuple[Callable[[FrontMatter], Iterator[Problem]], ...] = (
    _check_title,
    _check_sdk,
    _check_app_port,
    _check_colours,
    _check_short_description,
    _check_tags,
)


def as_port(value: object) -> int | None:
    """``value`` as a port: an integer 1-65535, or a string of one (``port: "8000"``)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    return value if is_port(value) else None


def is_port(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535
