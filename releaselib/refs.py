"""Resolve the OpenEnv git ref a release pins to, and the distribution name it publishes."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from releaselib.config import OPENENV_GIT_URL, RefResolution
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
    from releaselib.edit.deps import OPENENV_DISTS  # lazily: tomlkit and packaging are slow

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
) -> RefResolution:
    """Which OpenEnv ref to pin staged dependencies to for ``version``.

    ``main``/``master`` and 7-40 hex shas are used as given; otherwise ``version`` or
    ``v<version>`` when the remote has it as a tag or branch; otherwise ``main`` with a warning.
    """
    if version in BRANCHES:
        ref, reason, warning = version, "given as a branch", None
    elif SHA.match(version):
        ref, reason, warning = version, "given as a commit sha", None
    else:
        names = remote_refs(remote, runner)
        found = next((c for c in (version, f"v{version}") if names and c in names), None)
        if found:
            ref, reason, warning = found, f"tag or branch {found} found on {remote}", None
        elif names is None:
            ref, reason = "main", f"could not read {remote}; fell back to main"
            warning = f"git ls-remote {remote} failed; pinning envs to main"
        else:
            ref, reason = "main", f"no tag {version} or v{version} on {remote}; fell back to main"
            warning = f"{version} is not tagged on {remote} yet; pinning envs to main"
    dist = published_dist(repo, remote, ref, runner)
    if dist is None:
        dist = checkout_dist
        note = f"could not read pyproject.toml at {ref}; using the checkout's name {dist}"
        warning = f"{warning}; {note}" if warning else note
    return RefResolution(ref=ref, reason=reason, dist=dist, warning=warning)
