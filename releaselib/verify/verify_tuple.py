"""The release tuple for ``verify``, which needs no OpenEnv checkout and no git.

``verify`` only needs the namespace and suffix of the candidates (and the version, to find the
ledger). They come from the flags, else from the release's ledger: ``--ledger PATH``, or the one
ledger under the staging dir, or the release's own ledger there (``--repo`` or ``--version``
given). ``--repo`` only supplies the default version. The OpenEnv ref is never resolved (no
``git ls-remote``): it is taken from the ledger when there is one.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from releaselib import config as cfg
from releaselib.errors import LedgerError, UsageError
from releaselib.ledger.ledger import recorded_release as ledger_release
from releaselib.ledger.paths import ledger_name
from releaselib.options import Options, check_namespace, find_repo, hub_endpoint, pick
from releaselib.records import SPACE_ID
from releaselib.stage.discover import checkout_project

NO_CHECKOUT = cfg.NO_CHECKOUT
NOT_RESOLVED = "not resolved: verify needs no checkout"


def recorded_release(path: Path) -> dict[str, Any]:
    """The release tuple a ledger file records; UsageError naming the file when unreadable."""
    try:
        return ledger_release(path)
    except LedgerError as exc:
        raise UsageError(f"--ledger {exc.message}", remedy=exc.remedy) from None


def find_ledger(staging: Path, namespace: str | None, task: str = "verify") -> Path:
    """The one release ledger under ``staging`` (of ``namespace`` when given); the errors name
    ``task``."""
    found = sorted(staging.glob(f"ledger-{namespace or '*'}-*.json"))
    if len(found) == 1:
        return found[0]
    if not found:
        raise UsageError(
            f"{task} needs --version or --suffix: no release ledger in {staging}",
            remedy="pass --version V (and --namespace NS), or --ledger PATH",
        )
    names = ", ".join(p.name for p in found)
    raise UsageError(
        f"{len(found)} release ledgers in {staging} ({names})",
        remedy="pass --version V or --ledger PATH to pick one",
    )


def verify_config(
    options: Options,
    configured: Mapping[str, Any] | None = None,
    *,
    ledger: str | None = None,
    task: str = "verify",
) -> tuple[cfg.ReleaseConfig, cfg.RefResolution, Path | None]:
    """The release tuple verify (or another ``task`` that needs no checkout) runs with, its
    ref's provenance, and the ledger it came from."""
    conf = configured or {}
    given_repo = pick("repo", options.repo, conf)
    repo = find_repo(str(given_repo)) if given_repo else NO_CHECKOUT
    version = pick("version", options.version, conf)
    if version is None and given_repo:
        version = checkout_project(repo)[1]
    suffix = pick("suffix", options.suffix, conf)
    namespace = pick("namespace", options.namespace, conf)
    staging = Path(str(pick("staging_dir", options.staging_dir, conf, "hf-staging")))
    source = Path(ledger) if ledger else None
    if source is None and version is None and suffix is None:
        source = find_ledger(staging.expanduser(), namespace, task)
    recorded = recorded_release(source) if source is not None and source.exists() else {}
    namespace = namespace or recorded.get("namespace") or cfg.DEFAULT_NAMESPACE
    suffix = suffix or recorded.get("suffix")
    version = version or recorded.get("version") or str(suffix or "").removeprefix("-")
    if not version:
        raise UsageError(
            f"{task} needs --version or --suffix: {source} records no release tuple",
            remedy="pass --version V (and --namespace NS)",
        )
    version = cfg.check_version(str(version))
    suffix = str(suffix or cfg.space_suffix(version))
    if not SPACE_ID.match(f"x/x{suffix}"):
        raise UsageError(
            f"--suffix {suffix!r} would make an invalid Space name", remedy="use e.g. -0.2.2"
        )
    namespace = check_namespace("--namespace", str(namespace))
    if source is None:  # the release's own ledger, where release and the steps keep it
        default = staging.expanduser() / ledger_name(namespace, version, suffix)
        if default.is_file():
            source, recorded = default, recorded_release(default)
    ref = str(recorded.get("ref") or "-")
    reason = f"recorded in {source}" if recorded.get("ref") else NOT_RESOLVED
    release = cfg.ReleaseConfig(
        repo=repo,
        version=version,
        ref=ref,
        ref_reason=reason,
        dist=str(recorded.get("dist") or "-"),
        sha=str(recorded.get("sha") or ""),
        suffix=suffix,
        namespace=namespace,
        staging_dir=staging.expanduser().resolve(),
        hub_endpoint=hub_endpoint(pick("hub_endpoint", options.hub_endpoint, conf)),
    )
    resolution = cfg.RefResolution(ref, reason, release.dist, sha=release.sha)
    return release, resolution, source
