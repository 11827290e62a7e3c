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
- The client class comes from the env's own code, read with ``ast`` (nothing is imported);
  an env without one is shown with ``openenv.core.GenericEnvClient``.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

import yaml
from huggingface_hub import SpaceCardData
from huggingface_hub.repocard import REGEX_YAML_BLOCK

from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.edit.dockerfile_words import expand
from releaselib.errors import StageError
from releaselib.records import SPACE_ID, Change
from releaselib.render import render

HUB_COLOURS = ("red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray")
DEFAULT_COLOURS = {"colorFrom": "blue", "colorTo": "green"}
_COLOUR_WHY = f"the Hub accepts only {', '.join(HUB_COLOURS)}"
DEFAULT_APP_PORT = 8000
DEFAULT_BASE_PATH = "/web"
SHORT_DESCRIPTION_MAX = 60
CLIENT_BASES = frozenset({"EnvClient", "HTTPEnvClient", "MCPToolClient", "GenericEnvClient"})
SECTION_TITLE = "## Hugging Face Space Deployment"
REMEDY = "fix the README front matter in the checkout"

# Key order of a generated front matter, and of keys added to an existing one.
_CARD_ORDER = ("title", "colorFrom", "colorTo", "sdk", "app_port", "base_path", "tags")
# The Hub's opening line of a front matter block (see REGEX_YAML_BLOCK).
# ``--port 8004``/``--port=8004`` (uvicorn), ``-b 0.0.0.0:7860``/``--bind=:7860`` (gunicorn), in
# an ENTRYPOINT + CMD whose ``$VAR``/``${VAR:-N}`` are expanded from the stage's ENV first.
_PORT_OPTION = re.compile(r"(?:--port[= ]|(?:-b|--bind)[= ]\S*:)(\d+)\b")
_OPENING = re.compile(r"\s*---(?:\r\n|\r|\n|$)")

Problem = tuple[int | None, str]


class _Malformed(Exception):
    """A front matter block the Hub cannot read: where and why."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


@dataclass(frozen=True)
class _FrontMatter:
    """A parsed front matter block: its values, each top-level key's file line, the body."""

    data: dict[str, Any]
    lines: dict[str, int]
    body: str


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
    front = parsed or _FrontMatter({}, {}, text)
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


def metadata_problems(text: str) -> list[Problem]:
    """What the Hub would refuse in this README's metadata, as (line or None, message)."""
    try:
        front = _front_matter(text)
    except _Malformed as exc:
        return [(exc.line, exc.message)]
    if front is None:
        return [(1, "README has no front matter (a YAML block between '---' lines)")]
    return [problem for check in _CHECKS for problem in check(front)]


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
        line, problem = _yaml_problem(exc)
        message = f"{path}:{line + 1}: not valid YAML: {problem}"
        raise StageError(message, remedy="fix openenv.yaml") from exc
    if data is None:
        return None
    if not isinstance(data, dict):
        raise StageError(f"{path}: not a YAML mapping", remedy="fix openenv.yaml")
    port = data.get("port")
    if port is not None and _as_port(port) is None:
        raise StageError(
            f"{path}: port must be an integer 1-65535, got {port!r}", remedy="fix openenv.yaml"
        )
    return _as_port(port)


def _readme_port(env_dir: Path, shown: str) -> int | None:
    """The README front matter's app_port; StageError when it is there but not a port."""
    path = env_dir / "README.md"
    try:
        front = _front_matter(_strip_bom(path.read_bytes().decode("utf-8")))
    except (OSError, UnicodeDecodeError, _Malformed):
        return None
    value = front.data.get("app_port") if front is not None else None
    if value is not None and _as_port(value) is None:
        raise StageError(
            f"{shown}/README.md: app_port {_show(value)} is not a port (an integer 1-65535)",
            remedy="fix app_port in the README front matter",
        )
    return _as_port(value)


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
    return _as_port(int(match.group(1))) if match else None


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


# -- front matter ---------------------------------------------------------------------------


def _strip_bom(text: str) -> str:
    return text.removeprefix("\ufeff")


def _normalise_newlines(text: str, path: str) -> tuple[str, list[Change]]:
    if text.startswith("\ufeff"):  # the Hub reads front matter only at the very start
        text, bom = _strip_bom(text), [Change(path, 1, "UTF-8 BOM", "", "the card has no BOM")]
        more_text, more = _normalise_newlines(text, path)
        return more_text, bom + more
    if "\r\n" not in text:
        return text, []
    # Line endings only; the content of every line is untouched.
    why = "the card is written with LF line endings"
    return text.replace("\r\n", "\n"), [Change(path, None, "CRLF", "LF", why)]


def _parse_or_raise(text: str, path: str) -> _FrontMatter | None:
    try:
        return _front_matter(text)
    except _Malformed as exc:
        raise StageError(f"{path}:{exc.line}: {exc.message}", remedy=REMEDY) from exc


def _front_matter(text: str) -> _FrontMatter | None:
    """Split ``text`` the way the Hub does; None when it has no front matter."""
    match = REGEX_YAML_BLOCK.search(text)
    if match is None:
        opening = _OPENING.match(text)
        if opening:
            line = opening.group(0).rstrip("\r\n").count("\n") + 1
            raise _Malformed(line, "front matter is not terminated")
        return None
    first_line = match.group(1).count("\n") + 1
    node, data = _load_yaml(match.group(2), first_line)
    if data is None:
        return _FrontMatter({}, {}, text[match.end() :])
    if not isinstance(data, dict) or not all(isinstance(key, str) for key in data):
        raise _Malformed(first_line, "front matter is not a YAML mapping with string keys")
    lines = {key.value: first_line + key.start_mark.line for key, _ in node.value}
    return _FrontMatter(data, lines, text[match.end() :])


def _load_yaml(block: str, first_line: int) -> tuple[Any, Any]:
    """The composed node (for line numbers) and the loaded value of one YAML block."""
    loader = yaml.SafeLoader(block)
    try:
        node = loader.get_single_node()
        return node, None if node is None else loader.construct_document(node)
    except yaml.YAMLError as exc:
        line, problem = _yaml_problem(exc)
        raise _Malformed(first_line + line, f"front matter is not valid YAML: {problem}") from exc
    finally:
        loader.dispose()


def _yaml_problem(exc: yaml.YAMLError) -> tuple[int, str]:
    """The 0-based line and the one-line problem of a YAML error."""
    mark = getattr(exc, "problem_mark", None)
    return (mark.line if mark else 0), str(getattr(exc, "problem", None) or exc).strip()


# -- making the card valid ------------------------------------------------------------------


def _make_valid(
    card: SpaceCardData,
    front: _FrontMatter,
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
    shown = "" if before is None else f"{key}: {_show(before)}"
    return Change(path, line, shown, f"{key}: {_show(after)}", why)


def _show(value: Any) -> str:
    return f"[{', '.join(map(str, value))}]" if isinstance(value, list) else str(value)


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


# -- what the Hub would refuse --------------------------------------------------------------


def _check_title(front: _FrontMatter) -> Iterator[Problem]:
    title = front.data.get("title")
    if not isinstance(title, str) or not title.strip():
        yield front.lines.get("title"), "title is missing"


def _check_sdk(front: _FrontMatter) -> Iterator[Problem]:
    sdk = front.data.get("sdk")
    if sdk != "docker":
        yield front.lines.get("sdk"), f"sdk must be docker, got {sdk!r}"


def _check_app_port(front: _FrontMatter) -> Iterator[Problem]:
    if "app_port" not in front.data:
        yield None, "app_port is missing"
    elif not _is_port(front.data["app_port"]):
        port = front.data["app_port"]
        yield front.lines["app_port"], f"app_port must be an integer 1-65535, got {port!r}"


def _check_colours(front: _FrontMatter) -> Iterator[Problem]:
    for key in DEFAULT_COLOURS:
        if key in front.data and front.data[key] not in HUB_COLOURS:
            value = front.data[key]
            yield front.lines[key], f"{key} {value!r} is not one of {', '.join(HUB_COLOURS)}"


def _check_short_description(front: _FrontMatter) -> Iterator[Problem]:
    text = front.data.get("short_description")
    if text is not None and (not isinstance(text, str) or len(text) > SHORT_DESCRIPTION_MAX):
        limit = SHORT_DESCRIPTION_MAX
        message = f"short_description must be a string of at most {limit} characters"
        yield front.lines["short_description"], message


def _check_tags(front: _FrontMatter) -> Iterator[Problem]:
    tags = front.data.get("tags")
    if tags is not None and not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
        yield front.lines["tags"], "tags must be a list of strings"


_CHECKS: tuple[Callable[[_FrontMatter], Iterator[Problem]], ...] = (
    _check_title,
    _check_sdk,
    _check_app_port,
    _check_colours,
    _check_short_description,
    _check_tags,
)


def _as_port(value: object) -> int | None:
    """``value`` as a port: an integer 1-65535, or a string of one (``port: "8000"``)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    return value if _is_port(value) else None


def _is_port(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535


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
