"""The README Space card: the source's front matter made Hub-valid, plus a deployment section.

Metadata goes through huggingface_hub's own card classes (``SpaceCardData``, the Hub's
``REGEX_YAML_BLOCK``), the page through one jinja2 template. Decisions:

- Every key and value of the source front matter is kept, in its order; keys the card needs
  are added after them. Only values the Hub would refuse or the release must set are changed
  (sdk, app_port, colours, missing title/base_path/tags, an over-long short_description), and
  each change is recorded. Null values are dropped (the card classes drop them; the Hub reads
  a missing key and a null alike).
- The generated deployment section comes right after the front matter and the source body
  follows it verbatim: the release facts (which version, where it runs, how to connect) are
  what a reader of a versioned Space needs first, and a body with its own ``---`` rules or
  headings never has to be parsed to find an insertion point.
- CRLF line endings become LF (recorded); a missing trailing newline is added.
- The client class is the caller's (``releaselib.env_facts`` reads it from the env's
  code); an env without one is shown with ``openenv.core.GenericEnvClient``.
"""

from __future__ import annotations

import re
from typing import Any

from huggingface_hub import SpaceCardData

from releaselib.edit.front_matter import (
    DEFAULT_COLOURS,
    HUB_COLOURS,
    REMEDY,
    SHORT_DESCRIPTION_MAX,
    FrontMatter,
    Malformed,
    parse_front_matter,
    show_value,
    strip_bom,
)
from releaselib.errors import StageError
from releaselib.records import SPACE_ID, Change
from releaselib.render import render

_COLOUR_WHY = f"the Hub accepts only {', '.join(HUB_COLOURS)}"


DEFAULT_BASE_PATH = "/web"


SECTION_TITLE = "## Hugging Face Space Deployment"


# Key order of a generated front matter, and of keys added to an existing one.
_CARD_ORDER = ("title", "colorFrom", "colorTo", "sdk", "app_port", "base_path", "tags")


def runtime_url(space_id: str) -> str:
    """The Space's programmatic base URL: ``https://<owner>-<space>.hf.space``."""
    if not SPACE_ID.match(space_id):
        raise ValueError(f"{space_id!r} is not a Space id (owner/name)")
    host = re.sub(r"[/_.]", "-", space_id.lower())
    return f"https://{host}.hf.space"


def space_url(space_id: str) -> str:
    """The Space's page on the Hub."""
    return f"https://huggingface.co/spaces/{space_id}"


def build_space_readme(
    source: str | None,
    *,
    path: str,
    env: str,
    space_id: str,
    version: str,
    ref: str,
    hub_tag: str,
    app_port: int,
    client_class: str | None,
    import_package: str | None = None,
) -> tuple[str, list[Change]]:
    """Return the staged README (a Hub-valid Space card) for ``source`` and the changes made.

    ``source`` None means the env has no README. Raises StageError when the source's front
    matter is unterminated or is not a YAML mapping.
    """
    text, changes = _normalise_newlines(source or "", path)
    parsed = _parse_or_raise(text, path)
    front = parsed or FrontMatter({}, {}, text)
    card = SpaceCardData(**front.data)
    tags = ["openenv", hub_tag, f"openenv-{version}"]
    fixed = _make_valid(card, front, path, env, app_port, tags)
    front_matter = card.to_yaml(original_order=list(dict.fromkeys([*front.data, *_CARD_ORDER])))
    if parsed is None:
        fixed = [Change(path, 1, "", front_matter, "README had no front matter")]
    changes += fixed
    changes.append(Change(path, None, "", SECTION_TITLE, "release facts and client snippet"))
    body = front.body.lstrip("\n")
    rendered = render(
        "space_readme.md.j2",
        trim_blocks=True,
        front_matter=front_matter,
        title=card.title,
        env=env,
        version=version,
        ref=ref,
        hub_tag=hub_tag,
        space_id=space_id,
        space_url=space_url(space_id),
        runtime_url=runtime_url(space_id),
        body=body if not body or body.endswith("\n") else body + "\n",
        **_client_snippet(client_class, import_package or env),
    )
    return rendered, changes


def _normalise_newlines(text: str, path: str) -> tuple[str, list[Change]]:
    if text.startswith("\ufeff"):  # the Hub reads front matter only at the very start
        text, bom = strip_bom(text), [Change(path, 1, "UTF-8 BOM", "", "the card has no BOM")]
        more_text, more = _normalise_newlines(text, path)
        return more_text, bom + more
    if "\r\n" not in text:
        return text, []
    # Line endings only; the content of every line is untouched.
    why = "the card is written with LF line endings"
    return text.replace("\r\n", "\n"), [Change(path, None, "CRLF", "LF", why)]


def _parse_or_raise(text: str, path: str) -> FrontMatter | None:
    try:
        return parse_front_matter(text)
    except Malformed as exc:
        raise StageError(f"{path}:{exc.line}: {exc.message}", remedy=REMEDY) from exc


# -- making the card valid ------------------------------------------------------------------


def _make_valid(
    card: SpaceCardData,
    front: FrontMatter,
    path: str,
    env: str,
    app_port: int,
    tags: list[str],
) -> list[Change]:
    """Set what the release needs and the Hub demands; return the changes."""
    title = card.title if isinstance(card.title, str) and card.title.strip() else None
    wanted: list[tuple[str, Any, str]] = [
        ("title", title or f"{env} Environment", "the Hub needs a title"),
        ("sdk", "docker", "OpenEnv Spaces are Docker Spaces"),
        (
            "app_port",
            app_port,
            "the port the env serves on (openenv.yaml, README, CMD --port, else 8000)",
        ),
        ("base_path", card.get("base_path") or DEFAULT_BASE_PATH, "the web UI path"),
        ("colorFrom", _colour(card.get("colorFrom"), "colorFrom"), _COLOUR_WHY),
        ("colorTo", _colour(card.get("colorTo"), "colorTo"), _COLOUR_WHY),
        ("tags", _merged_tags(card.tags, tags), "collection discovery needs the release tags"),
    ]
    short = card.get("short_description")
    if isinstance(short, str) and len(short) > SHORT_DESCRIPTION_MAX:
        shortened = short[: SHORT_DESCRIPTION_MAX - 1].rstrip() + "…"
        wanted.append(("short_description", shortened, "the Hub allows 60 characters"))
    for key, value, _ in wanted:
        card[key] = value
    return [
        _change(key, front.data.get(key), value, front.lines.get(key), path, why)
        for key, value, why in wanted
        if front.data.get(key) != value
    ]


def _change(key: str, before: Any, after: Any, line: int | None, path: str, why: str) -> Change:
    shown = "" if before is None else f"{key}: {show_value(before)}"
    return Change(path, line, shown, f"{key}: {show_value(after)}", why)


def _colour(value: Any, key: str) -> str:
    name = value.strip().lower() if isinstance(value, str) else ""
    return name if name in HUB_COLOURS else DEFAULT_COLOURS[key]


def _merged_tags(existing: list[Any] | None, required: list[str]) -> list[str]:
    """Existing tags in order (as strings), then the required ones they lack."""
    tags = [str(tag) for tag in existing or []]
    return list(dict.fromkeys([*tags, *required]))


def _client_snippet(client_class: str | None, package: str) -> dict[str, Any]:
    if client_class is None:
        return {
            "client_class": "GenericEnvClient",
            "import_line": "from openenv.core import GenericEnvClient",
            "generic": True,
        }
    return {
        "client_class": client_class,
        "import_line": f"from {package} import {client_class}",
        "generic": False,
    }
