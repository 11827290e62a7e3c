"""Version bounds on one OpenEnv requirement: the ``<V`` a pin adds, the bounds a lift removes."""

from __future__ import annotations

import re
from collections.abc import Callable

from packaging.requirements import Requirement
from packaging.specifiers import Specifier
from packaging.version import InvalidVersion, Version

from releaselib.edit import requirement
from releaselib.errors import PinError

# A requirement a rewriter changes: (new text, why), or None to leave it.
Rewriter = Callable[[str, Requirement, Version], tuple[str, str] | None]


# The project name and extras as written, before the version spec, URL or marker.
_HEAD = re.compile(r"\s*[A-Za-z0-9][A-Za-z0-9._-]*(?:\s*\[[^\]]*\])?")


_UNBOUNDED_BELOW = frozenset({"<", "<=", "!="})


def release_version(version: str) -> Version:
    """``version`` as a PEP 440 version, or PinError: a pin needs a comparable version."""
    try:
        return Version(version)
    except InvalidVersion:
        raise PinError(
            f"release version {version!r} is not a PEP 440 version, so it cannot bound a pin",
            remedy="pass --version like 0.2.2 or 0.3.2.dev0",
        ) from None


def pin_requirement(spec: str, req: Requirement, version: Version) -> tuple[str, str] | None:
    """The pinned form of one OpenEnv requirement and why, or None if it is already below."""
    if req.url is not None:
        return _pin_url(spec, req.url, version)
    clauses = _clauses(spec)
    if any(_caps_below(s, version) for _, s in clauses):
        return None
    above = [t for t, s in clauses if not _below(_floor(s), version)]
    if above:
        raise PinError(
            f"{spec!r} requires {','.join(above)}, at or above the release {version}; a "
            f"<{version} pin would contradict it, so this env is not pinned",
            remedy="the env asks for a later OpenEnv than the release: fix the env or its "
            "lower bound by hand",
        )
    why = f"the env failed the {version} release; <{version} keeps installs below it"
    return _with_specifier(spec, [t for t, _ in clauses] + [f"<{version}"]), why


def lift_requirement(spec: str, req: Requirement, version: Version) -> tuple[str, str] | None:
    """One OpenEnv requirement without the bounds that exclude ``version``, and why."""
    clauses = [] if req.url is not None else _clauses(spec)
    lifted = [t for t, s in clauses if lifts(s, version)]
    if not lifted:
        return None
    kept = [(t, s) for t, s in clauses if not lifts(s, version)]
    new = [t for t, _ in kept]
    why = f"the env passed the {version} release; lifted {','.join(lifted)}"
    if all(s.operator in _UNBOUNDED_BELOW for _, s in kept):
        new.append(f">={version}")
        why += f"; >={version} names the release it passed with"
    return _with_specifier(spec, new), why


def _pin_url(spec: str, url: str, version: Version) -> tuple[str, str] | None:
    """``<name>[extras]<V`` for an OpenEnv git URL that would install V or later, else None."""
    match = requirement.OPENENV_URL.fullmatch(url)
    ref = match.group("ref") if match else None
    if match is None or not (ref in requirement.MOVING_REFS or _tag_at_or_above(ref, version)):
        return None
    head = _head(spec)
    rest = spec[len(head) :]
    tail = rest[rest.index(url) + len(url) :]
    why = (
        f"the env failed the {version} release and a direct URL (at {ref or 'the default branch'}) "
        f"cannot carry a version bound; replaced with an index requirement below {version}"
    )
    return f"{head}<{version}{tail}", why


def _tag_at_or_above(ref: str | None, version: Version) -> bool:
    """True if git ``ref`` is a version tag (``v0.2.2``, ``0.3.0``) not below ``version``."""
    try:
        return Version((ref or "").removeprefix("v")) >= version
    except InvalidVersion:
        return False


def _clauses(spec: str) -> list[tuple[str, Specifier]]:
    """The version clauses of a (non-URL) requirement, each as written and parsed."""
    body = spec[len(_head(spec)) :].partition(";")[0]
    text = body.strip().removeprefix("(").removesuffix(")")
    return [(t.strip(), Specifier(t.strip())) for t in text.split(",") if t.strip()]


def _with_specifier(spec: str, clauses: list[str]) -> str:
    """``spec`` with its version clauses replaced; name, spacing, commas and marker as written."""
    head = _head(spec)
    body, sep, marker = spec[len(head) :].partition(";")
    new = (", " if ", " in body else ",").join(clauses)
    if body.strip().startswith("("):
        new = f"({new})"
    if not body.strip():
        return head + new + body + sep + marker
    lead = body[: len(body) - len(body.lstrip())]
    trail = body[len(body.rstrip()) :]
    return head + lead + new + trail + sep + marker


def _head(spec: str) -> str:
    """The name and extras of a requirement that packaging parsed, as written."""
    match = _HEAD.match(spec)
    assert match is not None  # packaging parsed a name, so the pattern matches
    return match.group()


def _floor(spec: Specifier) -> Version | None:
    """The lowest version a clause admits; None when unbounded below or not comparable."""
    if spec.operator in _UNBOUNDED_BELOW:
        return None
    try:
        return Version(spec.version.removesuffix(".*"))
    except InvalidVersion:
        return None


def _below(floor: Version | None, version: Version) -> bool:
    """True if ``<version`` admits ``floor`` (or there is no floor)."""
    return floor is None or Specifier(f"<{version}").contains(floor, prereleases=True)


def lifts(spec: Specifier, version: Version) -> bool:
    """True for a ``<X`` clause that excludes ``version``: a pin for it or an earlier release."""
    return spec.operator == "<" and not spec.contains(version, prereleases=True)


def _caps_below(spec: Specifier, version: Version) -> bool:
    """True if a clause admits nothing at or above ``version``: the env is already pinned."""
    if spec.operator == "!=" or spec.contains(version, prereleases=True):
        return False
    return _below(_floor(spec), version)
