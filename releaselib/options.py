"""Turn flags, ``OPENENV_RELEASE_*`` variables, invoke config and defaults into a ReleaseConfig.

Order of precedence: a flag given on the command line, then the environment variable
``OPENENV_RELEASE_<NAME>``, then the ``release`` section of invoke's config files, then the default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from releaselib import config as cfg
from releaselib.errors import UsageError
from releaselib.ledger.paths import ledger_name
from releaselib.records import SPACE_ID
from releaselib.release_pin import check_recorded, recorded_pin
from releaselib.shell import Runner
from releaselib.shell import run as default_run
from releaselib.space_ids import check_suffix, refuse_token
from releaselib.stage.discover import checkout_project, is_openenv_checkout
from releaselib.stage.refs import resolve_head, resolve_ref

ENV_PREFIX = "OPENENV_RELEASE_"
#: The checkout's folders that staging reads (with the root pyproject.toml).
STAGED_FROM = ("envs", "src")


@dataclass(frozen=True)
class Options:
    """The release-tuple flags a task received (None = not given)."""

    repo: str | None = None
    version: str | None = None
    namespace: str | None = None
    collection_namespace: str | None = None
    suffix: str | None = None
    base_image: str | None = None
    base_sha: str | None = None
    staging_dir: str | None = None
    hub_endpoint: str | None = None
    hub_tag: str | None = None
    remote: str | None = None
    ref: str | None = None
    dist: str | None = None
    #: ``--ledger``: where the release may already record its pin (default: the staging dir's)
    ledger: str | None = None
    private: bool | None = None
    jobs: int | None = None


def pick(name: str, flag: Any, configured: Mapping[str, Any], default: Any = None) -> Any:
    """The first of: flag, environment variable, invoke config, default."""
    if flag is not None:
        return flag
    env = os.environ.get(ENV_PREFIX + name.upper())
    if env is not None and env != "":
        return env
    if configured.get(name) is not None:
        return configured[name]
    return default


def pick_suffix(flag: str | None, configured: Mapping[str, Any], default: str) -> str:
    """The suffix from the flag, ``OPENENV_RELEASE_SUFFIX`` or the config file, else
    ``default``. A source that is set but empty or blank is not skipped: it is a UsageError
    naming that source, since an empty suffix would make a candidate a canonical Space."""
    var = ENV_PREFIX + "SUFFIX"
    sources = (
        ("--suffix {!r}", flag),
        (var + "={!r}", os.environ.get(var)),
        ("invoke config release.suffix {!r}", configured.get("suffix")),
    )
    for where, value in sources:
        refuse_token(where.split(" {")[0].split("=")[0], value)
        if value is not None:
            return check_suffix(str(value), where.format(str(value)))
    return default


def find_repo(given: str | None, flag: str = "--repo") -> Path:
    """``--repo`` (or ``OPENENV_RELEASE_REPO``, which ``pick`` hands in), else the current
    directory when it is an OpenEnv checkout."""
    refuse_token(flag, given)
    if given:
        repo = Path(given).expanduser()
        if not is_openenv_checkout(repo):
            raise UsageError(
                f"{flag} {given}: not an OpenEnv checkout (needs envs/ and pyproject.toml)",
                remedy=f"point {flag} at the root of an OpenEnv clone",
            )
        return repo.resolve()
    here = Path.cwd()
    if is_openenv_checkout(here):
        return here.resolve()
    raise UsageError(
        f"{here} is not an OpenEnv checkout (needs envs/ and pyproject.toml)",
        remedy=f"pass --repo PATH or set {ENV_PREFIX}REPO=PATH, or run from inside the checkout",
    )


def repo_source(flag: str | None, configured: Mapping[str, Any]) -> str:
    """Where ``pick("repo", ...)`` found the checkout, as an error names it."""
    if flag is None and os.environ.get(ENV_PREFIX + "REPO"):
        return ENV_PREFIX + "REPO"
    if flag is None and configured.get("repo") is not None:
        return "invoke config release.repo"
    return "--repo"


def check_namespace(flag: str, value: str) -> str:
    refuse_token(flag, value)
    if not SPACE_ID.match(f"{value}/x"):
        raise UsageError(
            f"{flag} {value!r} is not a valid Hub namespace",
            remedy="use letters, digits, '-', '_', '.'",
        )
    return value


def check_jobs(value: object, flag: str = "--jobs") -> int:
    """``flag`` as a positive int (flags, variables and config files give strings)."""
    try:
        jobs = int(str(value))
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise UsageError(
            f"{flag} {value!r} must be a whole number, at least 1", remedy=f"e.g. {flag} 4"
        )
    return jobs


def check_staging_dir(staging: Path, repo: Path) -> Path:
    """The resolved ``--staging-dir``; refused where staging would write into what it reads.

    A folder of its own inside the checkout (the default ``./hf-staging`` when run from one) is
    fine: staging reads only ``envs/``, ``src/`` and the root ``pyproject.toml``. The checkout
    itself, a folder above it, or one inside ``envs/``, ``src/`` or an env dir (each resolved, so
    a symlink does not hide it) is a UsageError.
    """
    refuse_token("--staging-dir", staging)
    staging = staging.expanduser().resolve()
    read = [repo / part for part in STAGED_FROM]
    envs = repo / "envs"
    if envs.is_dir():
        read += [env for env in envs.iterdir() if env.is_dir()]
    if (
        staging == repo
        or repo.is_relative_to(staging)
        or any(staging.is_relative_to(p) or staging.is_relative_to(p.resolve()) for p in read)
    ):
        raise UsageError(
            f"--staging-dir {staging}: overlaps the checkout {repo} (staging never writes there)",
            remedy="pick a folder outside envs/ and src/, e.g. ./hf-staging",
        )
    return staging


def build_config(
    options: Options,
    configured: Mapping[str, Any] | None = None,
    *,
    runner: Runner = default_run,
    rehearsal: bool = False,
) -> tuple[cfg.ReleaseConfig, cfg.RefResolution]:
    """Resolve the release tuple, including the OpenEnv ref and its commit (which asks the
    remote); ``rehearsal``: pin the checkout's own HEAD and ask no remote."""
    conf = configured or {}
    repo = find_repo(pick("repo", options.repo, conf), repo_source(options.repo, conf))
    _, checkout_version = checkout_project(repo)
    picked = str(pick("version", options.version, conf, checkout_version))
    refuse_token("--version", picked)
    version, version_note = cfg.normalise_version(picked)
    suffix = pick_suffix(options.suffix, conf, cfg.space_suffix(version))
    base_repo = str(pick("base_image", options.base_image, conf, cfg.DEFAULT_BASE_REPO))
    base_sha = pick("base_sha", options.base_sha, conf)
    remote = str(pick("remote", options.remote, conf, cfg.OPENENV_GIT_URL))
    for name in ("hub_tag", "base_image", "base_sha", "ref", "dist", "remote", "hub_endpoint"):
        refuse_token(f"--{name.replace('_', '-')}", pick(name, getattr(options, name), conf))
    ref = pick("ref", options.ref, conf)
    dist = pick("dist", options.dist, conf)
    dist = None if dist is None else str(dist)
    namespace = check_namespace(
        "--namespace", str(pick("namespace", options.namespace, conf, cfg.DEFAULT_NAMESPACE))
    )
    staging = Path(str(pick("staging_dir", options.staging_dir, conf, "hf-staging")))
    ledger = Path(options.ledger) if options.ledger else None
    ledger = ledger or staging.expanduser() / ledger_name(namespace, version, suffix)
    recorded = recorded_pin(ledger, namespace, version, suffix)
    if recorded is not None:
        resolution = check_recorded(recorded, ref=ref, dist=dist)
    elif rehearsal:
        resolution = resolve_head(repo, runner=runner, dist=dist)
    else:
        resolution = resolve_ref(
            version,
            repo=repo,
            remote=remote,
            runner=runner,
            ref=None if ref is None else str(ref),
            dist=dist,
        )
    if version_note:
        warning = f"{version_note}; {resolution.warning}" if resolution.warning else version_note
        resolution = replace(resolution, warning=warning)
    private = pick("private", options.private, conf, True)
    jobs = check_jobs(pick("jobs", options.jobs, conf, 4))
    release = cfg.ReleaseConfig(
        repo=repo,
        version=version,
        ref=resolution.ref,
        ref_reason=resolution.reason,
        dist=resolution.dist,
        sha=resolution.sha,
        suffix=suffix,
        namespace=namespace,
        collection_namespace=check_namespace(
            "--collection-namespace",
            str(pick("collection_namespace", options.collection_namespace, conf, namespace)),
        ),
        base_image=cfg.base_image(base_repo, base_sha),
        private=private
        if isinstance(private, bool)
        else str(private).lower() in {"1", "true", "yes"},
        hub_tag=str(pick("hub_tag", options.hub_tag, conf, cfg.DEFAULT_HUB_TAG)),
        staging_dir=check_staging_dir(staging, repo),
        hub_endpoint=hub_endpoint(pick("hub_endpoint", options.hub_endpoint, conf)),
        jobs=jobs,
    )
    return release, resolution


def hub_endpoint(given: object) -> str | None:
    """``--hub-endpoint`` (or its config value), else ``HF_ENDPOINT``: a URL that holds no
    credentials (a user:password@ part, a token), which would be printed with the release tuple
    and sent in every request; the error names the source, never the value."""
    source = "--hub-endpoint" if given else "HF_ENDPOINT"
    value = str(given) if given else os.environ.get("HF_ENDPOINT")
    if not value:
        return None
    refuse_token(source, value)
    if "@" in value.split("://", 1)[-1].split("/", 1)[0]:
        raise UsageError(
            f"{source}: the URL holds a user or password (not printed, not used)",
            remedy="pass the Hub's URL alone; the token goes in HF_TOKEN",
        )
    return value

