"""The release tuple: everything a step needs to know about the release, in one record."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from docker_image import reference

from releaselib.errors import UsageError
from releaselib.space_ids import CandidateId, check_suffix

DEFAULT_NAMESPACE = "openenv"
#: the checkout of a tuple built without one (``verify``, and ``status``/``report`` from the
#: ledger alone)
NO_CHECKOUT = Path("(none)")
DEFAULT_BASE_REPO = "ghcr.io/huggingface/openenv-base"
DEFAULT_HUB_TAG = "openenv"
OPENENV_GIT_URL = "https://github.com/huggingface/OpenEnv.git"
#: The Hub's limit on a repo name (the part after ``owner/``).
MAX_NAME = 96
VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")
SHA_RE = re.compile(r"^[0-9a-fA-F]{7,64}$")


def check_version(version: str) -> str:
    """Return ``version`` if it is a plausible release version, else raise UsageError."""
    if not VERSION_RE.match(version) or not (
        any(c.isdigit() for c in version) or version in ("main", "master")
    ):
        raise UsageError(
            f"--version {version!r} is not a version",
            remedy="use something like 0.2.2 or v0.3.0 (letters, digits, '.', '-'; "
            "a digit, or the branch main or master)",
        )
    if "+" in version:
        raise UsageError(
            f"--version {version!r} has a local version label "
            f"('+{version.split('+', 1)[1]}'), which no pin can name (PEP 440 allows it in "
            "no '<' specifier) and no Space name can hold",
            remedy=f"release the public version, e.g. --version {version.split('+', 1)[0]}",
        )
    return version


def check_seconds(value: object, flag: str, default: float) -> float:
    """``value`` as a positive, finite number of seconds, else UsageError naming ``flag``
    (``nan`` never compares, so a wait of ``nan`` would never end)."""
    try:
        seconds = float(str(value))
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise UsageError(
            f"{flag} {value!r} must be a positive, finite number of seconds",
            remedy=f"e.g. {flag} {default:g}",
        )
    return seconds


def normalise_version(version: str) -> tuple[str, str | None]:
    """``v0.2.2`` -> ``0.2.2`` (the suffix, tags and pins use the bare version), with a note
    saying so; any other valid version as it is. A sha-looking version stays a version."""
    check_version(version)
    if version[:1] in "vV" and version[1:2].isdigit():
        bare = version[1:]
        return bare, f"--version {version} normalised to {bare} (the git tag is still looked up)"
    return version, None


def check_image(image: str, what: str) -> tuple[str, str | None, str | None]:
    """(name, tag, digest) of an image reference, parsed as Docker's distribution does;
    UsageError naming ``what`` when it is not one."""
    try:
        parsed = reference.Reference.parse(image)
    except Exception as exc:  # the parser raises its own exception classes, one per problem
        raise UsageError(
            f"{what} {image!r} is not a valid image reference ({exc})",
            remedy="use e.g. ghcr.io/huggingface/openenv-base (lowercase, no spaces)",
        ) from None
    return str(parsed["name"]), parsed["tag"], parsed["digest"]


def space_suffix(version: str) -> str:
    """``-<version>`` with a leading v dropped and characters other than alphanumerics and
    dots turned into ``-`` (``v0.2.2`` -> ``-0.2.2``)."""
    bare = version[1:] if version[:1] in "vV" and version[1:2].isdigit() else version
    return "-" + re.sub(r"[^A-Za-z0-9.]+", "-", bare)


def base_image(repo: str = DEFAULT_BASE_REPO, sha: str | None = None) -> str:
    """The literal base image a staged Dockerfile starts from."""
    if sha is not None and not SHA_RE.match(sha.removeprefix("sha-")):
        raise UsageError(f"--base-sha {sha!r} is not a hex sha", remedy="pass 7-64 hex digits")
    name, tag, digest = check_image(repo, "--base-image")
    if tag or digest:
        raise UsageError(
            f"--base-image {repo!r} already has a {'tag' if tag else 'digest'} "
            f"({tag or digest}); the tag comes from --base-sha (default latest)",
            remedy=f"pass --base-image {name}" + (f" --base-sha {tag}" if tag else ""),
        )
    image = f"{repo}:{sha or 'latest'}"
    check_image(image, "the base image")
    return image


@dataclass(frozen=True)
class RefResolution:
    """Which OpenEnv git ref a release uses, the commit it pins, and why."""

    ref: str
    reason: str
    dist: str
    warning: str | None = None
    #: the full commit sha ``ref`` resolved to ("" only where nothing is resolved: verify)
    sha: str = ""

    @property
    def label(self) -> str:
        return pin_label(self.ref, self.sha)


def pin_label(ref: str, sha: str) -> str:
    """How the pin is shown: ``main at 3f9c2e1a4b5d``; the short sha alone when ``ref`` is that
    sha; ``ref`` alone when nothing was resolved."""
    if not sha:
        return ref
    if sha.startswith(ref.lower()):
        return sha[:12]
    return f"{ref} at {sha[:12]}"


@dataclass(frozen=True)
class ReleaseConfig:
    """The release tuple. Built once per run by the task layer and passed to every step."""

    repo: Path
    version: str
    ref: str
    ref_reason: str
    dist: str
    suffix: str
    #: the full commit sha every OpenEnv requirement pins ("" only in verify's tuple when no
    #: ledger records one; staging refuses it)
    sha: str = ""
    namespace: str = DEFAULT_NAMESPACE
    collection_namespace: str = DEFAULT_NAMESPACE
    base_image: str = f"{DEFAULT_BASE_REPO}:latest"
    private: bool = True
    hub_tag: str = DEFAULT_HUB_TAG
    staging_dir: Path = field(default_factory=lambda: Path("hf-staging"))
    hub_endpoint: str | None = None
    jobs: int = 4

    def __post_init__(self) -> None:
        check_suffix(self.suffix)

    def space_id(self, env: str) -> CandidateId:
        """``env``'s candidate Space of this release; UsageError when its name would be
        longer than the Hub allows."""
        name = f"{env}{self.suffix}"
        if len(name) > MAX_NAME:
            raise UsageError(
                f"{env}: its candidate Space name {name[:40]}... is {len(name)} characters; "
                f"the Hub allows {MAX_NAME}",
                remedy=f"pass a shorter --suffix (at most {MAX_NAME - len(env)} characters)",
            )
        return CandidateId.of(self.namespace, env, self.suffix)

    @property
    def pin_label(self) -> str:
        """The pin as shown in the tuple, the card, the ledger and the briefing."""
        return pin_label(self.ref, self.sha)

    def with_(self, **changes: Any) -> ReleaseConfig:
        return replace(self, **changes)

    def as_json(self) -> dict[str, Any]:
        """The tuple as printed and recorded; it holds no token by construction."""
        data = asdict(self)
        data["repo"] = str(self.repo)
        data["staging_dir"] = str(self.staging_dir)
        return data


def release_key(config: ReleaseConfig) -> dict[str, Any]:
    """The release tuple as the ledger keeps it (no token: none is in the config)."""
    return {
        "namespace": config.namespace,
        "version": config.version,
        "suffix": config.suffix,
        "ref": config.ref,
        "sha": config.sha,
        "ref_reason": config.ref_reason,
        "dist": config.dist,
    }
