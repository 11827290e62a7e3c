"""The secret scan of an env's sources, and what `--allow-secret` and plugins let through."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from releaselib.errors import StageError, UsageError, short
from releaselib.plugins import Owned
from releaselib.records import AllowedSecret, SecretFinding
from releaselib.stage.sources import Sources

if TYPE_CHECKING:
    from releaselib.stage.scan_cache import ContentScan


def allow_flags(values: Iterable[str], repo: Path) -> tuple[AllowedSecret, ...]:
    """``--allow-secret PATH`` values as records: each an exact checkout file (never a
    pattern), recorded with the path as given; a path outside the checkout is a UsageError."""
    allowed = []
    for value in values:
        path = Path(value)
        if path.is_absolute() and path.resolve().is_relative_to(repo):
            path = path.resolve().relative_to(repo)
        remedy = "give the path the finding named, e.g. envs/my_env/settings.ini"
        if any(c in value for c in "*?[") and not (repo / path).exists():
            raise UsageError(
                f"--allow-secret {value!r}: an exact path, not a pattern", remedy=remedy
            )
        try:
            allowed.append(AllowedSecret(path.as_posix(), why=f"--allow-secret {value}"))
        except ValueError as exc:
            raise UsageError(
                f"--allow-secret {value!r}: not a file of the checkout {repo}", remedy=remedy
            ) from exc
    return tuple(allowed)


def scan_secrets(
    found: Sources, scanner: ContentScan, allowed: Sequence[Owned[AllowedSecret]]
) -> tuple[SecretFinding, ...]:
    """The findings ``allowed`` lets through (each recorded with who allowed it); StageError
    naming the first other finding."""
    passed, refused = [], []
    pinned = {a.record.sha256 for a in allowed if a.record.sha256}
    for finding in scanner.scan(sorted(found.scanned.items()), pinned):
        allow = next(
            (
                a
                for a in allowed
                if (
                    finding.path == a.record.path
                    if a.plugin == "--allow-secret"
                    else fnmatch.fnmatchcase(finding.path, a.record.path)
                )
                and a.record.kind in (None, finding.kind)
                and a.record.sha256 in (None, finding.sha256)
            ),
            None,
        )
        if allow is None:
            refused.append(finding)
        else:
            by = a_source(allow)
            passed.append(replace(finding, allowed_by=by))
    if refused:
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise StageError(
            f"{short(str(refused[0]), 160)}{more}",
            remedy="take the secret out of the file (and revoke it if it was ever pushed); "
            f"for a false positive, --allow-secret {short(refused[0].path, 160)}",
        )
    return tuple(passed)


def a_source(allow: Owned[AllowedSecret]) -> str:
    if allow.plugin == "--allow-secret":
        return allow.record.why
    return f"plugin {allow.plugin}: {allow.record.why}"
