"""Frozen records passed between steps and returned by plugins.

Plugins return these; the host validates them here, in ``__post_init__``, so a bad record
fails where it is made, naming the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ENV_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")
REPO_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")
SPACE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")
SECRET_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: A Space hardware flavor's shape (``t4-small``, ``a10g-large``); the Hub knows the flavors.
HARDWARE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def check_env_name(name: str) -> str:
    """Return ``name`` if it is a safe env directory name, else raise ValueError."""
    if not ENV_NAME.match(name) or ".." in name:
        raise ValueError(f"{name!r} is not a valid env name (letters, digits, '_', '-', '.')")
    return name


@dataclass(frozen=True)
class CanonicalTarget:
    """An unsuffixed Space an env promotes into, with the env vars that Space needs."""

    repo: str
    variables: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not REPO_NAME.match(self.repo) or "/" in self.repo:
            raise ValueError(f"canonical target {self.repo!r} must be a bare repo name, no owner")

    @property
    def env_vars(self) -> dict[str, str]:
        return dict(self.variables)


@dataclass(frozen=True)
class EnvProfile:
    """What a plugin says about one env: its canonical targets, probe timeout, and its needs.

    Needs are what the env cannot run without beyond a CPU Space and the package registries:
    ``secrets`` (the Space secrets it requires; an optional one is no need, say so in
    ``note``), ``hardware`` (a Space hardware flavor such as ``t4-small``) and ``services``
    (outside servers and downloads, in words: "a Gitea server", "the GPT-2 tokenizer from
    huggingface.co at build time"). A rehearsal gives none of them.
    """

    env: str
    targets: tuple[CanonicalTarget, ...] = ()
    probe_timeout: float | None = None
    secrets: tuple[str, ...] = ()
    hardware: str | None = None
    services: tuple[str, ...] = ()
    note: str = ""

    def __post_init__(self) -> None:
        check_env_name(self.env)
        repos = [t.repo for t in self.targets]
        if len(repos) != len(set(repos)):
            raise ValueError(f"{self.env}: canonical targets repeat a repo: {repos}")
        for name, values in (("secrets", self.secrets), ("services", self.services)):
            if not isinstance(values, tuple):
                raise ValueError(f"{self.env}: {name} must be a tuple of strings")
        for secret in self.secrets:
            if not isinstance(secret, str) or not SECRET_NAME.match(secret):
                raise ValueError(f"{self.env}: secret {secret!r} is not an env var name")
        if self.hardware is not None and not HARDWARE.match(self.hardware):
            raise ValueError(
                f"{self.env}: hardware {self.hardware!r} is not a Space hardware flavor "
                "(e.g. t4-small)"
            )
        for service in self.services:
            if not isinstance(service, str) or not service.strip():
                raise ValueError(f"{self.env}: a service must say in words what the env needs")

    @property
    def needs(self) -> tuple[str, ...]:
        """What the env needs, one phrase each: ``secret E2B_API_KEY``, ``hardware t4-small``,
        ``a Gitea server``."""
        hardware = (f"hardware {self.hardware}",) if self.hardware else ()
        return (*(f"secret {s}" for s in self.secrets), *hardware, *self.services)


@dataclass(frozen=True)
class Fix:
    """A change a plugin makes to one env's staged tree.

    ``apply`` receives the staged tree's root and edits files through releaselib.edit
    (parsers, never text substitution). It returns a short description of what it did,
    or ``None`` when there was nothing to do.
    """

    name: str
    why: str
    apply: Callable[[Path], str | None]

    def __post_init__(self) -> None:
        if not self.name or not self.why:
            raise ValueError("a Fix needs a name and a why")


@dataclass(frozen=True)
class Probe:
    """One runtime request the verifier sends as declared, in the order the plugin gives.

    After ``GET /health`` the verifier sends ``POST /reset``, the plugin's probes, then a
    schema-derived ``POST /step``; a probe of ``/reset`` or ``/step`` replaces the verifier's
    own. Those two must be ``POST`` expecting 200 with a usable observation (a ``/step`` body is
    ``{"action": {...}}``; a ``/reset`` body is also the reset's data when the episode runs over
    ``/ws``); any other probe passes when its answer has ``expect_status``. A field
    the verifier cannot honour is refused here (the registry reports it as a PluginError).
    """

    name: str
    method: str
    path: str
    body: Mapping[str, Any] | None = None
    expect_status: int = 200

    def __post_init__(self) -> None:
        if self.method not in {"GET", "POST"}:
            raise ValueError(f"probe {self.name}: method must be GET or POST (upper case)")
        if not self.path.startswith("/") or self.path == "/ws" or "?" in self.path:
            raise ValueError(f"probe {self.name}: path must start with '/' (no /ws, no query)")
        if not isinstance(self.expect_status, int) or not 100 <= self.expect_status <= 599:
            raise ValueError(f"probe {self.name}: expect_status must be an HTTP status")
        if self.body is not None:
            if not isinstance(self.body, Mapping) or self.method == "GET":
                raise ValueError(f"probe {self.name}: a body is a JSON object sent by POST")
            try:
                json.dumps(self.body)
            except (TypeError, ValueError):
                raise ValueError(f"probe {self.name}: its body is not JSON") from None
        if self.path in ("/reset", "/step"):
            if self.method != "POST" or self.expect_status != 200:
                raise ValueError(
                    f"probe {self.name}: {self.path} is probed by POST expecting 200 "
                    "(a usable observation)"
                )
            action = (self.body or {}).get("action")
            if self.path == "/step" and not isinstance(action, Mapping):
                raise ValueError(f'probe {self.name}: a /step body is {{"action": {{...}}}}')


@dataclass(frozen=True)
class Finding:
    """One problem a static check found in a staged tree."""

    check: str
    file: str
    line: int | None
    message: str
    remedy: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.message} ({self.check}); {self.remedy}"


@dataclass(frozen=True)
class Check:
    """A static check of a staged tree; ``run`` returns findings (empty when it passes)."""

    name: str
    description: str
    run: Callable[[Path], Iterable[Finding]]


@dataclass(frozen=True)
class Change:
    """One recorded rewrite in a staged file."""

    file: str
    line: int | None
    before: str
    after: str
    why: str


@dataclass(frozen=True)
class Lock:
    """An env's locked dependencies: the digest of its constraints file (``digest``, with
    ``packages`` pins for ``python``), or why it is not locked (``unlocked``); ``note`` names
    what stays unlocked in a lock (OpenEnv's own dependencies, direct URL requirements)."""

    digest: str | None = None
    packages: int = 0
    python: str | None = None
    unlocked: str | None = None
    note: str | None = None

    def as_json(self) -> dict[str, object]:
        return {k: v for k, v in asdict(self).items() if v not in (None, 0)}


@dataclass(frozen=True)
class EnvSpec:
    """An env directory found under ``envs/`` of an OpenEnv checkout."""

    name: str
    path: Path
    dockerfile: Path | None
    readme: Path | None
    deployable: bool
    reason: str


@dataclass(frozen=True)
class AllowedSecret:
    """A known false positive of the secret scan: a finding in the checkout file ``path``
    (checkout-relative, e.g. ``envs/my_env/docs/example.md``) of ``kind`` (any kind if None)
    and, when ``sha256`` is given, of exactly that value, does not fail the env; it is recorded
    with ``why``."""

    path: str
    why: str
    kind: str | None = None
    sha256: str | None = None  # only the finding whose value has this SHA-256 (hex)

    def __post_init__(self) -> None:
        if self.sha256 is not None and not re.fullmatch(r"[0-9a-f]{64}", self.sha256):
            raise ValueError(f"AllowedSecret {self.path!r}: sha256 must be 64 hex digits")
        if not self.path or self.path.startswith("/") or ".." in self.path.split("/"):
            raise ValueError(f"AllowedSecret path {self.path!r} must be checkout-relative")
        if not self.why.strip():
            raise ValueError(f"AllowedSecret {self.path!r} needs a why")


@dataclass(frozen=True)
class SecretFinding:
    """A secret the scanner found in a checkout file; never holds the value."""

    path: str
    line: int
    kind: str
    allowed_by: str | None = None
    #: SHA-256 of the value, to match an AllowedSecret's ``sha256``; kept in memory only.
    sha256: str = field(default="", repr=False, compare=False)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}"

    def as_json(self) -> dict[str, Any]:
        return {
            "file": self.path,
            "line": self.line,
            "kind": self.kind,
            "allowed_by": self.allowed_by,
        }


@dataclass(frozen=True)
class AppliedFix:
    """A plugin fix that changed one env's staged tree: its name, its why, and what it did."""

    name: str
    why: str
    did: str

    def as_json(self) -> dict[str, str]:
        return {"name": self.name, "why": self.why, "did": self.did}


@dataclass(frozen=True)
class StagedSpace:
    """The result of staging one env.

    ``git`` is False when the checkout is no git repository (staged as it is); ``modified``
    and ``untracked`` name the env dir's files with uncommitted changes and the untracked ones
    left out; ``allowed_secrets`` are the scanner's findings a plugin or ``--allow-secret``
    allowed.
    """

    env: str
    space_id: str
    staged_dir: Path
    ok: bool
    manifest: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    manifest_hash: str = ""
    fixes: tuple[AppliedFix, ...] = ()
    checks: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    changes: tuple[Change, ...] = ()
    error: str | None = None
    git: bool = True
    modified: tuple[str, ...] = ()
    untracked: tuple[str, ...] = ()
    allowed_secrets: tuple[SecretFinding, ...] = ()
    lock: Lock | None = None

    @property
    def worktree(self) -> str | None:
        """One line on the env dir's uncommitted changes and untracked files, if any."""
        if not (self.modified or self.untracked):
            return None
        folder = f"envs/{self.env}/"
        parts = []
        if self.modified:
            noun = "file" if len(self.modified) == 1 else "files"
            parts.append(f"{len(self.modified)} {noun} modified ({names(self.modified, folder)})")
        if self.untracked:
            parts.append(f"{len(self.untracked)} untracked ({names(self.untracked, folder)})")
        advice = (
            "untracked files are left out; commit them to release them"
            if self.untracked
            else "staged with their uncommitted changes"
        )
        return f"envs/{self.env}: {', '.join(parts)} — {advice}"

    @property
    def files(self) -> int:
        return len(self.manifest)

    @property
    def bytes(self) -> int:
        return sum(size for _, size in self.manifest.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "env": self.env,
            "space_id": self.space_id,
            "staged_dir": str(self.staged_dir),
            "ok": self.ok,
            "fixes": [f.as_json() for f in self.fixes],
            "checks": list(self.checks),
            "files": self.files,
            "bytes": self.bytes,
            "manifest_hash": self.manifest_hash,
            "changes": [
                {"file": c.file, "line": c.line, "before": c.before, "after": c.after, "why": c.why}
                for c in self.changes
            ],
            "error": self.error,
            "git": self.git,
            "modified": list(self.modified),
            "untracked": list(self.untracked),
            "worktree": self.worktree,
            "allowed_secrets": [f.as_json() for f in self.allowed_secrets],
            "lock": self.lock.as_json() if self.lock is not None else None,
        }


def names(paths: Iterable[str], folder: str, most: int = 3) -> str:
    """Up to ``most`` of ``paths`` relative to ``folder``, then how many more."""
    shown = sorted(p.removeprefix(folder) for p in paths)
    more = f", +{len(shown) - most} more" if len(shown) > most else ""
    return ", ".join(shown[:most]) + more


@dataclass(frozen=True)
class Signature:
    """A known runtime failure: a regular expression over a Space's errorMessage, and its fix."""

    name: str
    pattern: str
    fix: str

    def __post_init__(self) -> None:
        if not self.name or not self.fix:
            raise ValueError("a Signature needs a name and a fix")
        try:
            re.compile(self.pattern)
        except re.error as exc:
            raise ValueError(f"signature {self.name}: bad pattern: {exc}") from None

    def search(self, text: str) -> str | None:
        """The first matching text in ``text``, or None."""
        found = re.search(self.pattern, text, re.MULTILINE)
        return found.group(0) if found else None


OUTCOMES = ("PASS", "FAIL", "INCONCLUSIVE")


@dataclass(frozen=True)
class Verdict:
    """What verification concluded about one candidate, and for which of its commits."""

    env: str
    space_id: str
    outcome: str  # one of OUTCOMES
    commit: str | None  # the candidate's head sha when it was verified
    reason: str = ""

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"{self.env}: outcome {self.outcome!r} is not one of {OUTCOMES}")
