"""Resolve the OpenEnv git ref a release pins to, and the distribution name it publishes."""

from __future__ import annotations

import re
import tempfile
import tomllib
from pathlib import Path

from releaselib.config import OPENENV_GIT_URL, RefResolution
from releaselib.errors import UsageError
from releaselib.shell import Runner
from releaselib.shell import run as default_run

SHA = re.compile(r"^[0-9a-fA-F]{7,40}$")
FULL_SHA = re.compile(r"^[0-9a-f]{40}$")
BRANCHES = ("main", "master")
#: How a release that cannot read the remote goes on: a commit named in full.
REMOTE_REMEDY = "pass --ref SHA, the full 40-hex commit to pin (one the Space's build can fetch)"
DIST_REMEDY = "pass --dist openenv or --dist openenv-core, the name that commit publishes"


def remote_refs(remote: str, runner: Runner) -> dict[str, str] | None:
    """Short names of the remote's tags and branches -> their commit sha (an annotated tag's
    peeled commit), or None when the remote can't be read."""
    result = runner(["git", "ls-remote", "--heads", "--tags", remote], timeout=30)
    if not result.ok:
        return None
    names: dict[str, str] = {}
    peeled: dict[str, str] = {}
    for line in result.stdout.splitlines():
        sha, _, ref = line.partition("\t")
        for prefix in ("refs/tags/", "refs/heads/"):
            if ref.startswith(prefix):
                name = ref.removeprefix(prefix)
                if name.endswith("^{}"):
                    peeled[name.removesuffix("^{}")] = sha.lower()
                else:
                    names.setdefault(name, sha.lower())
    return names | peeled


def dist_in(pyproject: str) -> str | None:
    """The OpenEnv ``[project] name`` a pyproject.toml's text declares, else None."""
    from releaselib.edit.requirement import OPENENV_DISTS  # lazily: tomlkit and packaging are slow

    try:
        name = tomllib.loads(pyproject).get("project", {}).get("name")
    except tomllib.TOMLDecodeError:
        return None
    return str(name) if name in OPENENV_DISTS else None


def has_commit(repo: Path, sha: str, runner: Runner) -> bool:
    """True if the checkout's objects hold commit ``sha``."""
    return runner(["git", "-C", str(repo), "cat-file", "-e", f"{sha}^{{commit}}"], timeout=30).ok


def published_dist(repo: Path, remote: str, sha: str, runner: Runner) -> str | None:
    """The OpenEnv ``[project] name`` of the root pyproject.toml at commit ``sha``: from the
    checkout when it has the commit, else from a shallow fetch of that one commit from
    ``remote`` into a temp dir; None when neither can read it."""
    if has_commit(repo, sha, runner):
        # "./" reads the file beside the checkout, also when it is a subfolder of its repo
        shown = runner(["git", "-C", str(repo), "show", f"{sha}:./pyproject.toml"], timeout=30)
        return dist_in(shown.stdout) if shown.ok else None
    with tempfile.TemporaryDirectory(prefix="openenv-release-dist-") as tmp:
        if not fetch_commit(Path(tmp), remote, sha, runner):
            return None
        shown = runner(["git", "-C", tmp, "show", f"{sha}:pyproject.toml"], timeout=30)
        return dist_in(shown.stdout) if shown.ok else None


def fetch_commit(into: Path, remote: str, sha: str, runner: Runner) -> bool:
    """Fetch commit ``sha`` alone (depth 1) from ``remote`` into a new repository ``into``."""
    if not runner(["git", "init", "-q", str(into)], timeout=30).ok:
        return False
    fetched = runner(
        ["git", "-C", str(into), "fetch", "-q", "--depth", "1", remote, sha], timeout=120
    )
    return fetched.ok


def resolve_ref(
    version: str,
    *,
    repo: Path,
    remote: str = OPENENV_GIT_URL,
    runner: Runner = default_run,
    ref: str | None = None,
    dist: str | None = None,
) -> RefResolution:
    """Which OpenEnv ref to pin staged dependencies to for ``version``, and its commit sha.

    An explicit ``ref`` (``--ref``) is a tag or branch the remote has, or a commit sha: a full
    one is taken as is (after checking that a readable remote has it), a short one is expanded
    from the checkout's objects. Otherwise ``main``/``master`` are branches, and any other
    version (also one that looks like a sha, ``20241101``) is looked up as the tag or branch
    ``version`` or ``v<version>``; when the remote has neither, ``main`` with a warning. A
    remote that cannot be read is a UsageError whose remedy is ``--ref SHA``.

    The distribution name is read at the sha (``--dist`` given: it must agree when readable);
    unreadable and not given is a UsageError naming ``--dist``.
    """
    names = remote_refs(remote, runner)
    warning = None
    if ref is not None:
        chosen, sha, reason, warning = _explicit(ref, repo, remote, names, runner)
    elif names is None:
        raise UsageError(
            f"cannot read the OpenEnv remote {remote} (git ls-remote failed), so there is no "
            "commit to pin",
            remedy=REMOTE_REMEDY,
        )
    elif version in BRANCHES:
        chosen, reason = version, "given as a branch"
    else:
        found = next((c for c in (version, f"v{version}") if c in names), None)
        if found:
            chosen, reason = found, f"tag or branch {found} found on {remote}"
        else:
            chosen = "main"
            reason = f"no tag {version} or v{version} on {remote}; fell back to main"
            warning = f"{version} is not tagged on {remote} yet; pinning envs to main"
    if ref is None:
        assert names is not None
        if chosen not in names:
            raise UsageError(
                f"the OpenEnv remote {remote} has no branch {chosen}", remedy=REMOTE_REMEDY
            )
        sha = names[chosen]
    return RefResolution(
        ref=chosen,
        sha=sha,
        reason=reason,
        dist=dist_at(repo, remote, sha, runner, given=dist),
        warning=warning,
    )


def resolve_head(
    repo: Path, *, runner: Runner = default_run, dist: str | None = None
) -> RefResolution:
    """The checkout's own HEAD as the pin (a rehearsal, which serves that checkout and asks
    no remote)."""
    head = runner(["git", "-C", str(repo), "rev-parse", "--verify", "HEAD^{commit}"], timeout=30)
    sha = head.stdout.strip().lower()
    if not head.ok or not FULL_SHA.match(sha):
        raise UsageError(
            f"{repo}: no HEAD commit to pin (git rev-parse HEAD failed)",
            remedy="commit the checkout first (git commit), then rerun",
        )
    return RefResolution(
        ref="HEAD",
        sha=sha,
        reason="the rehearsed checkout's HEAD",
        dist=dist_at(repo, str(repo), sha, runner, given=dist),
    )


def dist_at(repo: Path, remote: str, sha: str, runner: Runner, *, given: str | None) -> str:
    """The distribution the pin names: read at ``sha``; ``given`` (``--dist``) when it cannot be
    read; a UsageError when it is neither, or when ``given`` contradicts what ``sha`` says."""
    from releaselib.edit.requirement import OPENENV_DISTS  # lazily: tomlkit and packaging are slow

    if given is not None and given not in OPENENV_DISTS:
        raise UsageError(f"--dist {given!r} is not an OpenEnv distribution", remedy=DIST_REMEDY)
    read = published_dist(repo, remote, sha, runner)
    if read is None and given is None:
        raise UsageError(
            f"cannot read the distribution name at {sha[:12]}: the checkout {repo} lacks the "
            f"commit and fetching it from {remote} failed, or its pyproject.toml names none",
            remedy=DIST_REMEDY,
        )
    if read is not None and given is not None and read != given:
        raise UsageError(
            f"--dist {given}: commit {sha[:12]} publishes {read}", remedy=f"pass --dist {read}"
        )
    return read or str(given)


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


def _explicit(
    ref: str, repo: Path, remote: str, names: dict[str, str] | None, runner: Runner
) -> tuple[str, str, str, str | None]:
    """(ref, sha, reason, warning) for ``--ref``."""
    if not valid_ref_name(ref):
        raise UsageError(
            f"--ref {ref!r} is not a usable git ref name", remedy="pass a sha, branch or tag"
        )
    for prefix in ("refs/heads/", "refs/tags/"):  # the remote's names are short ones
        ref = ref.removeprefix(prefix)
    if names is not None and ref in names:
        return ref, names[ref], f"--ref {ref}: tag or branch found on {remote}", None
    if not SHA.match(ref):
        if names is None:
            raise UsageError(
                f"--ref {ref}: cannot read the OpenEnv remote {remote} (git ls-remote failed) "
                "to find its commit",
                remedy=REMOTE_REMEDY,
            )
        raise UsageError(
            f"--ref {ref}: no such tag or branch on {remote}, and not a commit sha",
            remedy="pass a tag or branch the remote has, or a commit sha",
        )
    sha = ref.lower() if FULL_SHA.match(ref.lower()) else _expand(ref, repo, runner)
    if names is None:
        warning = f"git ls-remote {remote} failed; --ref {ref} is pinned unchecked"
        return ref, sha, f"--ref {ref}: a commit sha (the remote was not readable)", warning
    if sha not in names.values():
        with tempfile.TemporaryDirectory(prefix="openenv-release-ref-") as tmp:
            if not fetch_commit(Path(tmp), remote, sha, runner):
                raise UsageError(
                    f"--ref {ref}: {remote} has no commit {sha}",
                    remedy="pass a commit the remote has (push it first)",
                )
    return ref, sha, f"--ref {ref}: a commit sha {remote} has", None


def _expand(short: str, repo: Path, runner: Runner) -> str:
    """The full sha of the checkout's commit ``short``; UsageError when it has none or many."""
    found = runner(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{short}^{{commit}}"],
        timeout=30,
    )
    sha = found.stdout.strip().lower()
    if not found.ok or not FULL_SHA.match(sha):
        raise UsageError(
            f"--ref {short}: the checkout {repo} has no single commit starting with {short}",
            remedy="pass the full 40-hex commit sha",
        )
    return sha
