"""Pin every OpenEnv dependency of a staged Space to the release's git ref.

Every OpenEnv requirement (``openenv`` or ``openenv-core``) in a file the build reads becomes
``<dist>[core] @ git+https://github.com/huggingface/OpenEnv.git@<ref>``, whatever it said:
a range, an upper bound, an exact version, no version, an OpenEnv git URL at another ref, or
a URL to another repository. Anything else would let the build install a PyPI release or other
code than the one the release verifies. Decisions:

- Each rewrite is a Change whose ``before`` is the spec it replaced and whose ``why`` says what
  kind it was (loose, bounded or exact, a URL elsewhere, a pin ``pin`` wrote).
- Extras beyond ``core`` are kept (``openenv[cli]>=0.2`` -> ``openenv[core,cli] @ ...``), since
  dropping one would silently drop packages the env needs; ``core`` is always added.
- Environment markers are kept as written, after `` ; `` (pip needs the space after a URL);
  comments stay where they were (requirements files, TOML arrays).
- ``[tool.uv.sources]`` entries for OpenEnv (uv prefers them over the requirement) become a git
  source at the ref: a git source at another rev is re-pointed, a path source replaced.
- Editable OpenEnv git URLs (``-e git+...``) are installed non-editable at the ref; an
  OpenEnv wheel or sdist (a PyPI URL, a local path) is code from PyPI and pinned too.
- Constraints take no URL or extras: an OpenEnv line of a file read only through ``-c``, and
  an OpenEnv entry of ``[tool.uv] constraint-dependencies``, is removed (recorded).
- Poetry dependencies on OpenEnv become ``{git, rev, extras}`` tables; a ``setup.py`` or
  ``setup.cfg`` naming OpenEnv is reported by :func:`setup_requirement` (Python is not edited).
- A project's references to itself (the root ``all = ["openenv[core]", ...]``) are not
  dependencies and are never touched.
"""

from __future__ import annotations

import configparser
import re
import shlex
from collections import Counter
from collections.abc import Iterator
from typing import Any, TypeAlias

import tomlkit
from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from tomlkit.exceptions import ParseError
from tomlkit.items import Array, String, StringType

from releaselib.errors import StageError
from releaselib.records import Change

OPENENV_DISTS = frozenset({"openenv", "openenv-core"})
OPENENV_GIT = "git+https://github.com/huggingface/OpenEnv.git"
REMEDY = "fix the file in the checkout"

# Either org, with or without .git, an optional @ref and an optional #egg= fragment.
OPENENV_URL = re.compile(
    r"git\+https://github\.com/(?:huggingface|meta-pytorch)/openenv(?:\.git)?"
    r"(?:@(?P<ref>[^#@\s;]+))?(?:#[^\s;]*)?",
    re.IGNORECASE,
)
# A wheel or sdist of an OpenEnv distribution: a PyPI URL, a file URL or a local path.
OPENENV_ARCHIVE = re.compile(
    r"(?:[^\s;]*/)?openenv(?:[_-]core)?-\d[^/\s;]*\.(?:whl|tar\.gz|zip)(?:#[^\s;]*)?",
    re.IGNORECASE,
)
_EDITABLE = re.compile(r"(?:-e|--editable)(?:\s*=\s*|\s+)(?P<value>\S.*)")
MOVING_REFS = frozenset({None, "main", "master"})
_LOOSE_OPERATORS = frozenset({">=", ">", "!="})
_LEADING_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:$|[\[;@<>=!~(\s])")

# Shell text of one RUN instruction: a line continuation, a comment, a control operator (a bare
# newline ends a command, as in a heredoc), or a word made of quoted and unquoted pieces.
_SHELL_TOKEN = re.compile(
    r"""(?P<continuation>\\\n)
      | (?P<comment>(?<![^\s])\#[^\n]*)
      | (?P<op>&&|\|\||[;&|()<>\n])
      | (?P<word>(?:'[^']*'|"(?:[^"\\]|\\.)*"|\\[^\n]|[^\s'"\\;&|()<>])+)""",
    re.VERBOSE | re.DOTALL,
)
_PIP = re.compile(r"(?:.*/)?pip(?:\d+(?:\.\d+)*)?")
_OPTIONS_WITH_VALUE = frozenset({"-e", "--editable", "-r", "--requirement", "-c", "--constraint"})
_DOUBLE_QUOTE_UNSAFE = frozenset('"\\$`')
_HASH_OPTION = re.compile(r"[ \t]+--hash[= ]\S+")
_INCLUDE_OPTIONS = frozenset({"-r", "--requirement", "-c", "--constraint"})
#: Where ``pin`` records the requirement strings it wrote, so later steps recognise them.
TOOL_TABLE = "openenv-release"
_SOURCE_KINDS = ("path", "editable", "git", "rev", "tag", "branch", "url", "index", "workspace")


def pinned_requirement(
    dist: str, ref: str, marker: str | None = None, *, extras: tuple[str, ...] = ()
) -> str:
    """Return ``<dist>[core,...] @ git+https://github.com/huggingface/OpenEnv.git@<ref>``."""
    if dist not in OPENENV_DISTS:
        raise ValueError(f"{dist!r} is not an OpenEnv distribution ({sorted(OPENENV_DISTS)})")
    if not ref or any(c.isspace() or c in "@#;" for c in ref):
        raise ValueError(f"{ref!r} is not a usable git ref")
    names = ["core", *sorted({e.lower() for e in extras} - {"core"})]
    pinned = f"{dist}[{','.join(names)}] @ {OPENENV_GIT}@{ref}"
    return f"{pinned} ; {marker}" if marker else pinned


def rewrite_requirement(spec: str, *, dist: str, ref: str) -> str | None:
    """Return the pinned form of ``spec`` if it is an OpenEnv requirement not yet pinned to
    ``ref``, else None. ``spec`` may also be a bare OpenEnv git URL, as pip accepts.

    Raises ``InvalidRequirement`` when ``spec`` names OpenEnv but cannot be parsed.
    """
    bare = _bare_openenv_url(spec)
    if bare is not None:
        new = pinned_requirement(dist, ref, bare[1])
    else:
        req = parse_requirement(spec)
        if req is None:
            return None
        new = pinned_requirement(dist, ref, _marker(spec, req), extras=tuple(req.extras))
        if req.url and str(req) == str(Requirement(new)):  # pinned, spaced another way
            return None
    return None if new == spec.strip() else new


def find_openenv_requirements(text: str, *, path: str = "pyproject.toml") -> list[str]:
    """Every OpenEnv requirement string in a pyproject's dependency lists, pinned or not."""
    doc = parse_toml(text, path)
    own = own_name(doc)
    return [
        str(item)
        for array in requirement_arrays(doc)
        for item in array
        if isinstance(item, str) and _names_openenv(item) and not is_self(item, own)
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
            new = _rewrite_at(spec, path, line, dist=dist, ref=ref)
            if new is not None:
                array[index] = string_like(item, new)
                why = why_pinned(spec, ref, tool_pin=spec in written)
                changes.append(Change(path, line, spec, new, why))
    changes += _pin_sources(doc, text, path, ref)
    changes += _drop_constraints(doc, text, path, ref)
    changes += _pin_poetry(doc, text, path, ref)
    return (tomlkit.dumps(doc) if changes else text), changes


def pinned_ref(spec: str) -> str | None:
    """The ref an OpenEnv requirement is pinned to (a git URL to the OpenEnv repository at an
    explicit ref; ``main`` too, which a release of main pins to), else None."""
    bare = _bare_openenv_url(spec)
    if bare is None:
        try:
            url = Requirement(spec).url or ""
        except InvalidRequirement:
            return None
    else:
        url = spec.partition(";")[0].strip()
    match = OPENENV_URL.fullmatch(url)
    ok = match is not None and url.startswith(OPENENV_GIT + "@")
    return match.group("ref") if ok and match else None


def names_openenv(spec: str) -> bool:
    """True if ``spec`` names OpenEnv (whether or not it parses)."""
    return _names_openenv(spec)


def requirements_specs(text: str) -> list[tuple[int, str]]:
    """(line, spec) of each OpenEnv requirement of a requirements file (editable ones too)."""
    found = []
    for number, _, joined in _logical_lines(text.split("\n")):
        start, end = _requirement_span(joined)
        spec = joined[start:end]
        editable = _EDITABLE.fullmatch(spec)
        spec = editable.group("value") if editable is not None else spec
        if spec and not spec.startswith("-") and _names_openenv(spec):
            found.append((number, spec))
    return found


def source_specs(text: str, path: str) -> list[tuple[int | None, str, str | None]]:
    """(line, entry, ref or None) of each OpenEnv ``[tool.uv.sources]`` entry of a pyproject:
    the ref when it is the OpenEnv repository at a fixed rev."""
    sources = parse_toml(text, path).get("tool", {}).get("uv", {}).get("sources", {})
    found = []
    for key in [k for k in sources if canonicalize_name(k) in OPENENV_DISTS]:
        value = sources[key]
        for entry in value if isinstance(value, list) else [value]:
            git = isinstance(entry, dict) and entry.get("git") == OPENENV_GIT.removeprefix("git+")
            rev = entry.get("rev") if git else None
            shown = f"{key} = {entry.as_string().strip() if hasattr(entry, 'as_string') else entry}"
            found.append((_source_line(text, key), shown, rev if isinstance(rev, str) else None))
    return found


def conda_specs(text: str, path: str) -> list[str]:
    """The OpenEnv requirements in the ``pip:`` sections of a conda ``environment.yml``."""
    import yaml  # lazily: only envs with a conda environment need it

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise StageError(f"{path}: not valid YAML ({exc})", remedy=REMEDY) from exc
    entries = data.get("dependencies", []) if isinstance(data, dict) else []
    pips = [e["pip"] for e in entries if isinstance(e, dict) and isinstance(e.get("pip"), list)]
    return [str(s) for pip in pips for s in pip if isinstance(s, str) and _names_openenv(s)]


def check_conda_environment(text: str, *, path: str, dist: str, ref: str) -> None:
    """StageError naming the file and the spec when a conda environment's ``pip:`` section
    names OpenEnv other than pinned to ``ref``: no comment-keeping YAML editor is installed
    (ruamel.yaml), so staging cannot rewrite it safely."""
    for spec in conda_specs(text, path):
        if _rewrite_at(spec, path, None, dist=dist, ref=ref) is not None:
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
    return next((line.strip() for line in lines if _names_openenv(line.strip())), None)


def rewrite_requirements_txt(
    text: str, *, path: str, dist: str, ref: str, constraints: bool = False
) -> tuple[str, list[Change]]:
    """Pin OpenEnv lines of a requirements file; comments, options and line endings stay.

    Lines continued with a backslash are read joined, as pip reads them; a rewritten one
    becomes a single line without its ``--hash`` options. An editable OpenEnv git URL
    (``-e git+...``) becomes the pinned, non-editable requirement. In a constraints file
    (``constraints=True``, a file read only through ``-c``) an OpenEnv line is removed: pip
    refuses URLs and extras in constraints, and the requirement itself is pinned.
    """
    lines = text.split("\n")
    out: list[str] = []
    changes: list[Change] = []
    for number, group, joined in _logical_lines(lines):
        start, end = _requirement_span(joined)
        spec = joined[start:end]
        editable = _EDITABLE.fullmatch(spec)
        if editable is not None:
            spec = editable.group("value")
        if not spec or spec.startswith("-"):
            out += group
            continue
        new = _rewrite_at(spec, path, number, dist=dist, ref=ref)
        if new is None:
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
    return "\n".join(out), changes


#: The comment ``pin`` puts after a requirements-file line it pinned.
_PIN_MARK = re.compile(r"\s*# openenv-release pin \(was .+\)\s*$")
CONSTRAINT_DROPPED = "constraint dropped; the requirement is pinned to the ref"


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
    found = []
    for line in text.splitlines():
        words = re.split(r"(?:^|\s)#", line, maxsplit=1)[0].split()
        for i, word in enumerate(words):
            name, eq, value = word.partition("=")
            if name in _INCLUDE_OPTIONS and eq:
                found.append((_short(name), value))
            elif word in _INCLUDE_OPTIONS and i + 1 < len(words):
                found.append((_short(word), words[i + 1]))
            elif word.startswith(("-r", "-c")) and len(word) > 2 and word[2] != "-":
                found.append((word[:2], word[2:]))
    return found


def _short(option: str) -> str:
    return "-c" if option in ("-c", "--constraint") else "-r"


def included_files(text: str) -> list[str]:
    """The files a requirements text reads through ``-r``/``-c`` (and the long forms)."""
    return [file for _, file in includes(text)]


def rewrite_shell_command(
    command: str, *, path: str, line: int, dist: str, ref: str
) -> tuple[str, list[Change]]:
    """Pin OpenEnv specs given to an installer in one RUN instruction: ``pip install`` (any
    pip, ``uv pip``), ``uv add``, ``uv tool install``, ``uv run --with``, ``uvx --from``,
    ``pipx install|run --spec|inject``; a ``sh -c`` string is rewritten inside and re-quoted.

    ``line`` is the file line where ``command`` starts; only the rewritten words change.
    """
    pieces: list[str] = []
    changes: list[Change] = []
    done = 0
    for start, match, value, prefix in _install_arguments(command):
        word_line = line + command.count("\n", 0, start)
        if prefix is None:  # the string of sh -c
            inner, found = rewrite_shell_command(
                value, path=path, line=word_line, dist=dist, ref=ref
            )
            if found:
                pieces += [command[done:start], _shell_quote(inner, match.group()[0])]
                done = match.end()
                changes += found
            continue
        new = _rewrite_at(value, path, word_line, dist=dist, ref=ref)
        if new is None:
            continue
        option = prefix.rstrip("=") or "".join(command[:start].split()[-1:])
        if option == "--with" and "," in new:  # uv reads --with a,b as two packages
            raise StageError(
                f"{path}:{word_line}: cannot pin {value!r} given to --with "
                "(uv splits its value at commas)",
                remedy="install OpenEnv with pip install or a requirements file instead",
            )
        pieces += [command[done:start], _shell_quote(prefix + new, match.group()[0])]
        done = match.end()
        why, before = why_pinned(value, ref), value
        if start != match.start() or _EDITABLE.fullmatch(_unquote(match.group())):
            why += "; installed non-editable"
            before = " ".join(_unquote(w) for w in command[start : match.end()].split())
        changes.append(Change(path, word_line, before, new, why))
    return "".join([*pieces, command[done:]]), changes


def shell_specs(command: str) -> list[str]:
    """Every OpenEnv requirement an installer in ``command`` is given (``sh -c`` strings read)."""
    found = []
    for _, _, value, prefix in _install_arguments(command):
        if prefix is None:
            found += shell_specs(value)
        elif _names_openenv(value):
            found.append(value)
    return found


def rewrite_words(value: str, *, path: str, line: int, dist: str, ref: str) -> str | None:
    """``value`` (an ARG or ENV value a RUN expands) with each OpenEnv requirement among its
    whitespace-separated words pinned in the form without spaces (``openenv[core]@git+...``),
    which survives word splitting of an unquoted ``$VAR``; None if nothing changes. A spec
    that needs spaces (a marker) cannot be written so: StageError naming it."""
    if _names_openenv(value.strip()) and parse_requirement(value.strip()) is not None:
        words = [value.strip()]
    else:
        words = value.split()
    out, changed = [], False
    for word in words:
        new = _rewrite_at(word, path, line, dist=dist, ref=ref) if _names_openenv(word) else None
        if new is not None and " ; " in new:
            raise StageError(
                f"{path}:{line}: cannot pin {word!r} in a build variable (its marker needs "
                "spaces, which word splitting breaks)",
                remedy="install OpenEnv with pip install or a requirements file instead",
            )
        compact = new.replace(" @ ", "@") if new is not None else None
        if compact is not None and compact != word:
            changed = True
        out.append(compact or word)
    return " ".join(out) if changed else None


def _rewrite_at(spec: str, path: str, line: int | None, *, dist: str, ref: str) -> str | None:
    """``rewrite_requirement``, with an unparseable OpenEnv spec reported at ``path:line``."""
    try:
        return rewrite_requirement(spec, dist=dist, ref=ref)
    except InvalidRequirement as exc:
        where = f"{path}:{line}" if line else path
        raise StageError(
            f"{where}: cannot parse OpenEnv requirement {spec!r} ({exc})", remedy=REMEDY
        ) from exc


def _bare_openenv_url(spec: str) -> tuple[str | None, str | None] | None:
    """(ref, marker) if ``spec`` is a bare OpenEnv git URL (with an optional marker), else None."""
    url, _, marker = spec.partition(";")
    match = OPENENV_URL.fullmatch(url.strip())
    if match is None:
        return (None, marker.strip() or None) if _is_archive(url) else None
    return match.group("ref"), marker.strip() or None


def _is_archive(url: str) -> bool:
    """True if ``url`` is a wheel or sdist of an OpenEnv distribution (a path or any URL)."""
    return OPENENV_ARCHIVE.fullmatch(url.strip().removeprefix("file://")) is not None


def parse_requirement(spec: str) -> Requirement | None:
    """The parsed requirement if it names OpenEnv, None if it doesn't; raise if it can't tell."""
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        if _names_openenv(spec):
            raise
        return None
    return req if canonicalize_name(req.name) in OPENENV_DISTS else None


def _names_openenv(spec: str) -> bool:
    """True if ``spec`` (parseable or not) is a requirement on an OpenEnv distribution."""
    if _bare_openenv_url(spec) is not None:
        return True
    match = _LEADING_NAME.match(spec)
    return match is not None and canonicalize_name(match.group(1)) in OPENENV_DISTS


def _marker(spec: str, req: Requirement) -> str | None:
    """The marker of ``spec`` as its author wrote it, or packaging's form if that is ambiguous."""
    if req.marker is None:
        return None
    written = spec.partition(";")[2].strip()
    return written if _same_marker(written, req.marker) else str(req.marker)


def _same_marker(text: str, marker: Marker) -> bool:
    try:
        return Marker(text) == marker
    except InvalidMarker:
        return False


def why_pinned(before: str, ref: str, *, tool_pin: bool = False) -> str:
    """The recorded reason for pinning ``before`` to ``ref``: what kind of spec it was."""
    if tool_pin:
        return f"a pin openenv-release wrote after a failed release; the Space runs {ref}"
    bare = _bare_openenv_url(before)
    url = OPENENV_URL.search(before) if bare is not None else None
    if bare is not None and url is None:
        archive = before.partition(";")[0].strip()
        return f"an OpenEnv release archive ({archive}) is PyPI's code; pinned to {ref}"
    if bare is None:
        req = Requirement(before)
        if req.url is not None:
            url = OPENENV_URL.fullmatch(req.url)
            if url is None:
                return f"URL {req.url} is not OpenEnv at the release's ref; pinned to {ref}"
        elif not req.specifier:
            return f"an unversioned OpenEnv spec would install a PyPI release; pinned to {ref}"
        elif all(s.operator in _LOOSE_OPERATORS for s in req.specifier):
            return f"loose OpenEnv spec would install an older PyPI release; pinned to {ref}"
        else:
            return (
                f"OpenEnv spec {req.specifier} would install a PyPI release, not the release's "
                f"code; pinned to {ref}"
            )
    at = url.group("ref") if url is not None else None
    if at in MOVING_REFS:
        return f"OpenEnv git URL follows a moving branch; pinned to {ref}"
    return f"OpenEnv git URL at {at}, not the release's ref; pinned to {ref}"


def parse_toml(text: str, path: str) -> Any:
    """The pyproject as a tomlkit document; StageError naming ``path`` if it is not valid TOML
    or its dependency lists are not lists of requirement strings."""
    try:
        doc = tomlkit.parse(text)
    except ParseError as exc:
        raise StageError(f"{path}:{exc.line}: not valid TOML ({exc})", remedy=REMEDY) from exc
    project = _table(doc, "project", path)
    _requirements(project.get("dependencies"), "project.dependencies", path)
    for key, value in _table(project, "optional-dependencies", path, "project.").items():
        _requirements(value, f"project.optional-dependencies.{key}", path)
    for key, value in _table(doc, "dependency-groups", path).items():
        _requirements(value, f"dependency-groups.{key}", path, groups=True)
    return doc


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
    match = _LEADING_NAME.match(spec)
    return own is not None and match is not None and canonicalize_name(match.group(1)) == own


def requirement_arrays(doc: Any) -> Iterator[Array]:
    """project.dependencies, each optional-dependencies list, each dependency group and uv's
    ``dev-dependencies`` and ``override-dependencies``."""
    project = doc.get("project", {})
    uv = _uv_table(doc)
    candidates = [project.get("dependencies")]
    candidates += project.get("optional-dependencies", {}).values()
    candidates += doc.get("dependency-groups", {}).values()
    candidates += [uv.get("dev-dependencies"), uv.get("override-dependencies")]
    yield from (array for array in candidates if isinstance(array, Array))


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
        if isinstance(spec, str) and _names_openenv(spec):
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


def _requirement_span(line: str) -> tuple[int, int]:
    """Start and end of the requirement in a requirements-file line.

    The requirement ends at a `` #`` comment or at per-requirement options (`` --hash=...``).
    """
    body = re.split(r"(?:^|\s)#|\s--", line.rstrip("\r"), maxsplit=1)[0]
    start = len(body) - len(body.lstrip())
    return start, len(body.rstrip())


def simple_commands(command: str) -> Iterator[list[str]]:
    """The unquoted words of each simple command in a RUN's shell text."""
    segment: list[str] = []
    for token in _SHELL_TOKEN.finditer(command):
        if token.lastgroup == "word":
            segment.append(_unquote(token.group()))
        elif token.lastgroup == "op":
            if segment:
                yield segment
            segment = []
    if segment:
        yield segment


#: Shells whose ``-c`` string is itself a command line (``sh -c "pip install ..."``).
SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh"})


def shell_string(words: list[str]) -> int | None:
    """The index of the command string in ``sh -c STRING`` (also ``bash -lc``, ``-ec``...)."""
    if not words or words[0].rsplit("/", 1)[-1] not in SHELLS:
        return None
    for index, word in enumerate(words[1:], start=1):
        if not word.startswith("-"):
            return None
        if "c" in word[1:] and not word.startswith("--"):
            return index + 1 if index + 1 < len(words) else None
    return None


def shell_commands(command: str) -> Iterator[list[str]]:
    """``simple_commands``, with the commands inside a ``sh -c`` string read too."""
    for words in simple_commands(command):
        yield words
        at = shell_string(command_words(words))
        if at is not None:
            yield from shell_commands(command_words(words)[at])


def command_words(words: list[str]) -> list[str]:
    """The words from the command word on: shell keywords, ``sudo``, ``VAR=value`` dropped."""
    while words and (
        words[0] in _PREFIX_WORDS or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0], re.DOTALL)
    ):
        words = words[1:]
    return words


_PREFIX_WORDS = frozenset(
    {"then", "else", "do", "if", "elif", "while", "until", "!", "{", "exec", "sudo"}
)


InstallArgument: TypeAlias = tuple[int, re.Match[str], str, str | None]


def _install_arguments(command: str) -> Iterator[InstallArgument]:
    """(start, last word, requirement, prefix) for each package given to an installer in
    ``command``: an editable OpenEnv URL starts at its ``-e``, so the option goes with it;
    ``prefix`` is ``--with=`` and the like for an option written with its value, and None
    for the string of ``sh -c`` (the value is then a command line)."""
    segment: list[re.Match[str]] = []
    for token in _SHELL_TOKEN.finditer(command):
        if token.lastgroup == "word":
            segment.append(token)
        elif token.lastgroup == "op":
            yield from _packages(segment)
            segment = []
    yield from _packages(segment)


def _packages(words: list[re.Match[str]]) -> Iterator[InstallArgument]:
    """Package arguments of one simple command, if it is an installer (or ``sh -c``)."""
    values = [_unquote(w.group()) for w in words]
    if values[:1] and values[0].upper() == "RUN":  # a RUN text: keyword and BuildKit flags
        while len(values) > 1 and values[1].startswith("--"):
            words, values = words[1:], values[1:]
        words, values = words[1:], values[1:]
    skipped = len(values) - len(command_words(values))
    words, values = words[skipped:], values[skipped:]
    at = shell_string(values)
    if at is not None:
        yield words[at].start(), words[at], values[at], None
        return
    yield from _tool_packages(words, values)
    if "install" not in values:
        return
    at = values.index("install")
    if not any(_PIP.fullmatch(v) for v in values[:at]):
        return
    option, previous = "", words[at]
    for word, value in zip(words[at + 1 :], values[at + 1 :], strict=True):
        editable = _EDITABLE.fullmatch(value)
        if option in ("-e", "--editable") and _bare_openenv_url(value) is not None:
            yield previous.start(), word, value, ""
        elif editable is not None and _bare_openenv_url(editable.group("value")) is not None:
            yield word.start(), word, editable.group("value"), ""
        elif option not in _OPTIONS_WITH_VALUE and not value.startswith("-"):
            yield word.start(), word, value, ""
        option, previous = value, word


# uv and pipx: options whose value is a package, the subcommands that take packages as
# arguments, and options whose value is not a package.
_WITH_OPTIONS = frozenset({"--with", "--from", "--spec", "--with-editable"})
_TOOL_SUBCOMMANDS = {"uv": (("add",), ("tool", "install")), "pipx": (("install",), ("inject",))}
_TOOL_VALUE_OPTIONS = frozenset(
    {"--group", "--optional", "--extra", "--python", "-p", "--index", "--index-url",
     "--directory", "--project", "--package", "--suffix", "--pip-args"}
)  # fmt: skip


def _tool_packages(words: list[re.Match[str]], values: list[str]) -> Iterator[InstallArgument]:
    """Packages given to ``uv``, ``uvx`` or ``pipx``: values of ``--with``/``--from``/``--spec``
    anywhere, and the arguments of ``uv add``, ``uv tool install``, ``pipx install|inject``."""
    tool = values[0].rsplit("/", 1)[-1] if values else ""
    if tool not in ("uv", "uvx", "pipx"):
        return
    plain = [i for i, v in enumerate(values[1:], start=1) if not v.startswith("-")]
    takes = next(
        (
            len(s)
            for s in _TOOL_SUBCOMMANDS.get(tool, ())
            if tuple(values[i] for i in plain[: len(s)]) == s
        ),
        0,
    )
    first = (
        plain[takes - 1] + 1 + (1 if values[plain[takes - 1]] == "inject" else 0) if takes else 0
    )
    option = ""
    for index in range(1, len(values)):
        value = values[index]
        name, eq, rest = value.partition("=")
        if option in _WITH_OPTIONS:
            yield words[index].start(), words[index], value, ""
        elif eq and name in _WITH_OPTIONS:
            yield words[index].start(), words[index], rest, name + "="
        elif (
            takes
            and index >= first
            and not value.startswith("-")
            and option not in _TOOL_VALUE_OPTIONS
        ):
            yield words[index].start(), words[index], value, ""
        option = value


def _unquote(word: str) -> str:
    try:
        return "".join(shlex.split(word))
    except ValueError:
        return word


def _shell_quote(value: str, first: str) -> str:
    """``value`` quoted as one shell word, in the original word's quotes where safe."""
    if first == "'" and "'" not in value:
        return f"'{value}'"
    if first != "'" and not _DOUBLE_QUOTE_UNSAFE & set(value):
        return f'"{value}"'
    return shlex.quote(value)
