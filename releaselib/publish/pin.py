"""Pin failed envs below the release in the OpenEnv checkout, and lift pins of envs that pass.

This is the only step that writes to the checkout. It edits ``envs/<env>/pyproject.toml``
(and the env's requirements files) through tomlkit, so only the OpenEnv requirement strings
change; comments, quoting, layout and line endings stay byte for byte. Every OpenEnv
requirement (``openenv`` or ``openenv-core``, any extras, markers kept as written) in
``project.dependencies``, each optional-dependencies list and each dependency group is
rewritten. Decisions:

- Pinning adds ``<V`` (V normalised by packaging: ``v0.2.2`` -> ``0.2.2``); every clause stays
  (``>=0.2.0`` -> ``>=0.2.0,<0.2.2``; ``<0.3`` stays, so lifting gives it back). A requirement
  that already admits nothing at or above V is left alone: idempotent.
- When the env's own lower bound is at or above V (``>=V``, ``~=V``, ``==V``, ``>=0.2.3`` for
  V 0.2.2), ``<V`` would contradict what the env says it needs: pin refuses that env (PinError
  naming the file, line and clause) and writes nothing.
- Each requirement pin writes is recorded in ``[tool.openenv-release] pins`` (requirement, what
  it was, the release), a table tomlkit keeps. Staging recognises these pins (and replaces them
  with the release's ref like any spec), promote refuses a tree that still carries one
  (:func:`tool_written_pins`), and lifting removes the entries it lifts.
- A direct URL cannot carry a version bound. An OpenEnv git URL at no ref, ``main``/``master``
  or a version tag at or above V would install the failed release, so it becomes
  ``<name>[extras]<V`` from the index. A URL at a version tag below V, a commit sha, another
  branch, or another repository never upgrades by itself and is left as is.
- Lifting removes every ``<X`` clause that excludes V: the bounds a pin wrote for V or for an
  earlier release. A pin this tool recorded gets back the spec it replaced (``was``, URLs too);
  otherwise, when no lower bound remains, ``>=V`` is added, so the env names the release it
  passed with, as the checkout's envs do.
- Every file the env's build reads its requirement from is pinned: the pyproject and each
  ``requirements*.txt`` of the env (with its ``-r``/``-c`` includes), a requirements line marked
  with ``# openenv-release pin (was SPEC)``. A contradiction in any file refuses the env and
  writes no file.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import tomlkit
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import Specifier
from packaging.version import InvalidVersion, Version
from tomlkit.items import String

from releaselib.edit import pyproject_deps, requirement, requirements_txt
from releaselib.edit.pyproject_deps import TOOL_TABLE
from releaselib.errors import PinError, StageError
from releaselib.files import write_atomic
from releaselib.records import Change, check_env_name
from releaselib.shell import Runner
from releaselib.shell import run as default_run

Action = Literal["pin", "lift"]
# A requirement a rewriter changes: (new text, why), or None to leave it.
Rewriter = Callable[[str, Requirement, Version], tuple[str, str] | None]

# The project name and extras as written, before the version spec, URL or marker.
_HEAD = re.compile(r"\s*[A-Za-z0-9][A-Za-z0-9._-]*(?:\s*\[[^\]]*\])?")
_UNBOUNDED_BELOW = frozenset({"<", "<=", "!="})
PINS_COMMENT = (
    "Pins written by `openenv-release pin` after failed releases; a later pin lifts them."
)


@dataclass(frozen=True)
class PinResult:
    """What ``pin_env`` or ``lift_env_pin`` did to one env's pyproject."""

    env: str
    path: str
    action: Action
    changed: bool
    diff: str
    changes: tuple[Change, ...]
    paths: tuple[str, ...] = ()  # every file changed (the pyproject, requirements files)


def release_version(version: str) -> Version:
    """``version`` as a PEP 440 version, or PinError: a pin needs a comparable version."""
    try:
        return Version(version)
    except InvalidVersion:
        raise PinError(
            f"release version {version!r} is not a PEP 440 version, so it cannot bound a pin",
            remedy="pass --version like 0.2.2 or 0.3.2.dev0",
        ) from None


def pin_below(text: str, *, version: str, path: str) -> tuple[str, list[Change]]:
    """Make every OpenEnv requirement in a pyproject exclude ``version`` and later releases."""
    return _rewrite(text, path, release_version(version), pin_requirement)


def lift_pin(text: str, *, version: str, path: str) -> tuple[str, list[Change]]:
    """Remove the ``<X`` bounds that keep OpenEnv requirements below ``version``."""
    return _rewrite(text, path, release_version(version), lift_requirement)


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
    lifted = [t for t, s in clauses if _lifts(s, version)]
    if not lifted:
        return None
    kept = [(t, s) for t, s in clauses if not _lifts(s, version)]
    new = [t for t, _ in kept]
    why = f"the env passed the {version} release; lifted {','.join(lifted)}"
    if all(s.operator in _UNBOUNDED_BELOW for _, s in kept):
        new.append(f">={version}")
        why += f"; >={version} names the release it passed with"
    return _with_specifier(spec, new), why


def unified_diff(before: str, after: str, path: str) -> str:
    """A ``git apply``-able unified diff of one file, empty when nothing changed."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def pin_env(repo: Path, env: str, *, version: str) -> PinResult:
    """Pin ``env``'s OpenEnv dependency below ``version`` in the checkout at ``repo``."""
    release_version(version)
    return _edit_env(repo, env, "pin", version)


def lift_env_pin(repo: Path, env: str, *, version: str) -> PinResult:
    """Lift the pins that keep ``env`` below ``version`` in the checkout at ``repo``."""
    release_version(version)
    return _edit_env(repo, env, "lift", version)


def commit_message(results: Sequence[PinResult], *, version: str) -> str:
    """The commit message: a subject, then the pinned and the lifted envs."""
    pinned = sorted(r.env for r in results if r.changed and r.action == "pin")
    lifted = sorted(r.env for r in results if r.changed and r.action == "lift")
    parts = [f"pin {len(pinned)} env(s) below {version}"] if pinned else []
    parts += [f"lift the pins of {len(lifted)} env(s) passing {version}"] if lifted else []
    body = [f"Pinned below {version} (failed): {', '.join(pinned)}"] if pinned else []
    body += [f"Lifted (passed {version}): {', '.join(lifted)}"] if lifted else []
    subject = "; ".join(parts)
    return "\n\n".join([subject[:1].upper() + subject[1:], "\n".join(body)]) + "\n"


def commit_pins(
    repo: Path, results: Sequence[PinResult], *, version: str, runner: Runner = default_run
) -> str | None:
    """Commit the changed pyprojects in one commit on the current branch; return its sha.

    Only those files go into the commit, whatever else is staged. None when nothing changed.
    """
    changed = [r for r in results if r.changed]
    if not changed:
        return None
    files = sorted({p for r in changed for p in r.paths or (r.path,)})
    by_hand = f"the pins are written; fix the repository and commit {' '.join(files)} by hand"
    _git(runner, repo, ["add", "--", *files], by_hand)
    message = commit_message(changed, version=version)
    _git(runner, repo, ["commit", "-m", message, "--", *files], by_hand)
    return _git(runner, repo, ["rev-parse", "HEAD"], "the commit is made; see git log").strip()


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
    return any(_lifts(s, version) for s in req.specifier)


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


def _lifts(spec: Specifier, version: Version) -> bool:
    """True for a ``<X`` clause that excludes ``version``: a pin for it or an earlier release."""
    return spec.operator == "<" and not spec.contains(version, prereleases=True)


def _caps_below(spec: Specifier, version: Version) -> bool:
    """True if a clause admits nothing at or above ``version``: the env is already pinned."""
    if spec.operator == "!=" or spec.contains(version, prereleases=True):
        return False
    return _below(_floor(spec), version)


def _edit_env(repo: Path, env: str, action: Action, version: str) -> PinResult:
    """Rewrite every file the env's build reads its OpenEnv requirement from: its pyproject and
    its ``requirements*.txt`` (with their ``-r``/``-c`` includes). Every file is checked before
    any is written, so a refusal in one file writes nothing."""
    from releaselib.stage.git_needs import with_includes

    env_dir = repo / "envs" / check_env_name(env)
    pyproject = env_dir / "pyproject.toml"
    named = sorted(p for p in env_dir.rglob("requirements*.txt") if p.is_file())
    files = [f for f in dict.fromkeys(f for n in named for f in with_includes(n)) if f.is_file()]
    if not pyproject.is_file() and not files:
        raise PinError(
            f"{env}: {pyproject} not found, so there is no OpenEnv dependency to {action}",
            remedy="check the env name and that --repo points at the OpenEnv checkout",
        )
    edits: list[tuple[Path, str, str, str, list[Change]]] = []
    for file in ([pyproject] if pyproject.is_file() else []) + files:
        rel = file.relative_to(repo).as_posix()
        before = file.read_bytes().decode("utf-8")
        if file.suffix == ".toml":
            edit = pin_below if action == "pin" else lift_pin
        else:
            edit = pin_requirements_txt if action == "pin" else lift_requirements_txt
        after, changes = edit(before, version=version, path=rel)
        edits.append((file, rel, before, after, changes))
    changed = [e for e in edits if e[2] != e[3]]
    for file, _, _, after, _ in changed:
        write_atomic(file, after.encode("utf-8"))
    return PinResult(
        env,
        edits[0][1],
        action,
        bool(changed),
        "".join(unified_diff(before, after, rel) for _, rel, before, after, _ in edits),
        tuple(c for *_, changes in edits for c in changes),
        tuple(rel for _, rel, *_ in changed),
    )


def _git(runner: Runner, repo: Path, args: list[str], remedy: str) -> str:
    """Run one git command in ``repo``; PinError naming it and git's complaint if it fails."""
    done = runner(["git", *args], cwd=repo)
    if not done.ok:
        complaint = (done.stderr or done.stdout).strip().splitlines()
        reason = complaint[-1] if complaint else f"exit status {done.returncode}"
        raise PinError(f"git {args[0]} failed in {repo}: {reason}", remedy=remedy)
    return done.stdout
