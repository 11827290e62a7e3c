"""The OpenEnv pin a release resolved once: read back from its ledger by every later step.

``main`` moves; a release must not. The first step that opens the release's ledger records the
ref, its commit sha, why, and the distribution (``release_key``); every later step (deploy,
verify, promote, pin, report, a rerun) takes them from there instead of asking the remote, so
staged trees, candidates and canonicals pin one commit however long the release takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from releaselib.config import RefResolution
from releaselib.errors import LedgerError, UsageError
from releaselib.ledger.ledger import recorded_release
from releaselib.stage.refs import FULL_SHA

NEW_RELEASE = (
    "drop it to keep the release's pin, or start another release (--suffix S, or --ledger PATH)"
)


def recorded_pin(path: Path, namespace: str, version: str, suffix: str) -> Mapping[str, Any] | None:
    """The release tuple the ledger at ``path`` records when it is this release's and holds a
    resolved sha; None when there is no such ledger (yet), or it predates pins."""
    if not path.is_file():
        return None
    try:
        release = recorded_release(path)
    except LedgerError:
        return None  # opening it for the run says what is wrong, naming the file
    if (release.get("namespace"), release.get("version"), release.get("suffix")) != (
        namespace,
        version,
        suffix,
    ):
        return None
    sha = str(release.get("sha") or "")
    if not FULL_SHA.match(sha) or not release.get("ref") or not release.get("dist"):
        return None
    return {**release, "ledger": str(path)}


def check_recorded(
    recorded: Mapping[str, Any], *, ref: object = None, dist: object = None
) -> RefResolution:
    """The recorded pin as the run's resolution; UsageError when ``--ref`` or ``--dist`` asks
    for another one than the release already pins."""
    pinned, sha, name = str(recorded["ref"]), str(recorded["sha"]), str(recorded["dist"])
    shown = f"{pinned} at {sha[:12]}"
    if ref is not None and str(ref) not in (pinned, sha) and not sha.startswith(str(ref).lower()):
        raise UsageError(
            f"--ref {ref}: this release already pins OpenEnv {shown} "
            f"(recorded in {recorded['ledger']})",
            remedy=NEW_RELEASE,
        )
    if dist is not None and str(dist) != name:
        raise UsageError(
            f"--dist {dist}: this release already pins {name} (recorded in {recorded['ledger']})",
            remedy=NEW_RELEASE,
        )
    why = str(recorded.get("ref_reason") or "resolved when the release began")
    return RefResolution(
        ref=pinned,
        sha=sha,
        dist=name,
        reason=f"{why}; recorded in the release's ledger, not resolved again",
    )
