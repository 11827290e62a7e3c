"""OpenEnv requirement strings: recognising them, and their form pinned to a git ref.

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
  OpenEnv wheel or sdist (a PyPI URL, a local path) is code from PyPI and pinned too, and so
  is an archive of the OpenEnv repository (``https://github.com/.../OpenEnv/archive/main.zip``).
- Constraints take no URL or extras: an OpenEnv line of a file read only through ``-c``, and
  an OpenEnv entry of ``[tool.uv] constraint-dependencies``, is removed (recorded).
- Poetry dependencies on OpenEnv become ``{git, rev, extras}`` tables; a ``setup.py`` or
  ``setup.cfg`` naming OpenEnv is reported (``unrewritable_manifests``: Python is not edited).
- A project's references to itself (the root ``all = ["openenv[core]", ...]``) are not
  dependencies and are never touched.
"""

from __future__ import annotations

import re

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from releaselib.errors import StageError

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


# An archive of the OpenEnv repository itself (a branch, tag or commit), as GitHub serves it.
OPENENV_REPO_ARCHIVE = re.compile(
    r"https?://(?:codeload\.)?github\.com/(?:huggingface|meta-pytorch)/openenv(?:\.git)?/"
    r"(?:archive|zip|tar\.gz|legacy\.zip|legacy\.tar\.gz)/[^\s;]+",
    re.IGNORECASE,
)


EDITABLE = re.compile(r"(?:-e|--editable)(?:\s*=\s*|\s+)(?P<value>\S.*)")


MOVING_REFS = frozenset({None, "main", "master"})


_LOOSE_OPERATORS = frozenset({">=", ">", "!="})


LEADING_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:$|[\[;@<>=!~(\s])")


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
    bare = bare_openenv_url(spec)
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


def pinned_ref(spec: str) -> str | None:
    """The ref an OpenEnv requirement is pinned to (a git URL to the OpenEnv repository at an
    explicit ref; ``main`` too, which a release of main pins to), else None."""
    bare = bare_openenv_url(spec)
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


CONSTRAINT_DROPPED = "constraint dropped; the requirement is pinned to the ref"


def rewrite_at(spec: str, path: str, line: int | None, *, dist: str, ref: str) -> str | None:
    """``rewrite_requirement``, with an unparseable OpenEnv spec reported at ``path:line``."""
    try:
        return rewrite_requirement(spec, dist=dist, ref=ref)
    except InvalidRequirement as exc:
        where = f"{path}:{line}" if line else path
        raise StageError(
            f"{where}: cannot parse OpenEnv requirement {spec!r} ({exc})", remedy=REMEDY
        ) from exc


def bare_openenv_url(spec: str) -> tuple[str | None, str | None] | None:
    """(ref, marker) if ``spec`` is a bare OpenEnv git URL (with an optional marker), else None."""
    url, _, marker = spec.partition(";")
    match = OPENENV_URL.fullmatch(url.strip())
    if match is None:
        return (None, marker.strip() or None) if _is_archive(url) else None
    return match.group("ref"), marker.strip() or None


def _is_archive(url: str) -> bool:
    """True if ``url`` is a wheel or sdist of an OpenEnv distribution (a path or any URL), or
    an archive of the OpenEnv repository."""
    url = url.strip()
    if OPENENV_REPO_ARCHIVE.fullmatch(url):
        return True
    return OPENENV_ARCHIVE.fullmatch(url.removeprefix("file://")) is not None


def parse_requirement(spec: str) -> Requirement | None:
    """The parsed requirement if it names OpenEnv, None if it doesn't; raise if it can't tell."""
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        if names_openenv(spec):
            raise
        return None
    return req if canonicalize_name(req.name) in OPENENV_DISTS else None


def names_openenv(spec: str) -> bool:
    """True if ``spec`` (parseable or not) is a requirement on an OpenEnv distribution."""
    if bare_openenv_url(spec) is not None:
        return True
    match = LEADING_NAME.match(spec)
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
    bare = bare_openenv_url(before)
    url = OPENENV_URL.search(before) if bare is not None else None
    if bare is not None and url is None:
        archive = before.partition(";")[0].strip()
        if OPENENV_REPO_ARCHIVE.fullmatch(archive):
            return f"an OpenEnv repository archive ({archive}) is not the ref; pinned to {ref}"
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
