"""Resolve the OpenEnv git ref a release pins to, and the distribution name it publishes."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from releaselib.config import OPENENV_GIT_URL, RefResolution
from releaselib.errors import UsageError
from releaselib.shell import Runner
from releaselib.shell import run as default_run

SHA = re.compile(r"^[0-9a-fA-F]{7,40}$")
BRANCHES = ("main", "master")


def remote_refs(remote: str, runner: Runner) -> set[str] | None:
    """Short names of the remote's tags and branches, or None when it can't be read."""
    result = runner(["git", "ls-remote", "--heads", "--tags", remote], timeout=30)
    if not result.ok:
        return None
    names: set[str] = set()
    for line in result.stdout.splitlines():
        _, _, ref = line.partition("\t")
        for prefix in ("refs/tags/", "refs/heads/"):
            if ref.startswith(prefix):
                names.add(ref.removeprefix(prefix).removesuffix("^{}"))
    return names


def published_dist(repo: Path, remote: str, ref: str, runner: Runner) -> str | None:
    """The ``[project] name`` of the root pyproject.toml at ``ref``, read from the checkout's
    objects (or from ``remote`` when it is a local repository); None when unreadable."""
    from releaselib.edit.requirement import OPENENV_DISTS  # lazily: tomlkit and packaging are slow

    # "./" reads the file beside the checkout, also when the checkout is a subfolder of its
    # repo; a bare remote has no work tree, so there the path is from its root
    places = [("-C", str(repo), "./pyproject.toml")]
    if Path(remote).exists():
        places.append(("--git-dir", remote, "pyproject.toml"))
    for flag, where, path in places:
        for rev in (ref, f"origin/{ref}", f"refs/tags/{ref}"):
            shown = runner(["git", flag, where, "show", f"{rev}:{path}"], timeout=30)
            if shown.ok:
                try:
                    name = tomllib.loads(shown.stdout).get("project", {}).get("name")
                except tomllib.TOMLDecodeError:
                    continue
                if name in OPENENV_DISTS:
                    return str(name)
    return None


def resolve_ref(
    version: str,
    *,
    repo: Path,
    checkout_dist: str,
    remote: str = OPENENV_GIT_URL,
    runner: Runner = default_run,
    ref: str | None = None,
) -> RefResolution:
    """Which OpenEnv ref to pin staged dependencies to for ``version``.

    An explicit ``ref`` (``--ref``: a sha, branch or tag that differs from the version) is used
    as given when it is a 7-40 hex sha or the remote has it, and is a UsageError when the remote
    is readable and lacks it. Otherwise ``main``/``master`` are branches, and any other version
    (also one that looks like a sha, ``20241101``) is looked up as the tag or branch
    ``version`` or ``v<version>``; when the remote has neither, ``main`` with a warning.
    """
    if ref is not None:
        chosen, reason, warning = _explicit(ref, remote, runner)
    elif version in BRANCHES:
        chosen, reason, warning = version, "given as a branch", None
    else:
        names = remote_refs(remote, runner)
        found = next((c for c in (version, f"v{version}") if names and c in names), None)
        if found:
            chosen, reason, warning = found, f"tag or branch {found} found on {remote}", None
        elif names is None:
            chosen, reason = "main", f"could not read {remote}; fell back to main"
            warning = f"git ls-remote {remote} failed; pinning envs to main"
        else:
            chosen = "main"
            reason = f"no tag {version} or v{version} on {remote}; fell back to main"
            warning = f"{version} is not tagged on {remote} yet; pinning envs to main"
    dist = published_dist(repo, remote, chosen, runner)
    if dist is None:
        dist = checkout_dist
        note = f"could not read pyproject.toml at {chosen}; using the checkout's name {dist}"
        warning = f"{warning}; {note}" if warning else note
    return RefResolution(ref=chosen, reason=reason, dist=dist, warning=warning)


# What ``git check-ref-format --allow-onelevel`` refuses: control characters, space and
# ~^:?*[\\, "..", "@{", "//", a component starting with "." or ending with ".lock"; plus what a
# pinned URL cannot carry ("@", "#", ";").
_BAD_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\@#;]|\.\.|//|(?:^|/)\.|\.lock(?:/|$)")


def valid_ref_name(ref: str) -> bool:
    """True if ``ref`` is a git ref name a release can pin to (not an option, not ``-x``)."""
    return (
        bool(ref)
        and not ref.startswith(("-", "/"))
        and not ref.endswith(("/", "."))
        and not _BAD_REF.search(ref)
    )


def _explicit(ref: str, remote: str, runner: Runner) -> tuple[str, str, str | None]:
    """(ref, reason, warning) for ``--ref``."""
    if not valid_ref_name(ref):
        raise UsageError(
            f"--ref {ref!r} is not a usable git ref name", remedy="pass a sha, branch or tag"
        )
    for prefix in ("refs/heads/", "refs/tags/"):  # the remote's names are short ones
        ref = ref.removeprefix(prefix)
    names = remote_refs(remote, runner)
    if names is not None and ref in names:
        return ref, f"--ref {ref}: tag or branch found on {remote}", None
    if SHA.match(ref):
        return ref, f"--ref {ref}: a commit sha", None
    if names is None:
        return ref, f"--ref {ref}: used as given", f"git ls-remote {remote} failed; --ref unchecked"
    raise UsageError(
        f"--ref {ref}: no such tag or branch on {remote}, and not a commit sha",
        remedy="pass a tag or branch the remote has, or a 7-40 hex commit sha",
    )
