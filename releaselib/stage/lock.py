"""Locked dependencies: each staged env's Python requirements, resolved once with ``uv pip
compile`` for the Space's Python and platform, go into the staged tree as a constraints file
that every installer of the build honours (``lock_tree``), so the candidate, the canonical and
any later rebuild install the same versions.

Resolutions are cached under the user's cache dir, keyed by a digest of their inputs (the
requirement lines, the OpenEnv dependencies, Python, platform and uv's version): an unchanged
env costs nothing on the next release. So are re-locked uv.lock files (``relock_cache``).
Delete the folder to re-resolve.

The OpenEnv git requirement is not resolved (there is no reaching GitHub from here): its own
dependencies are, read from the release's OpenEnv pyproject at the release ref when the checkout
has that commit; otherwise they stay unlocked and the lock's note says so.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import tempfile
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import platformdirs
import uv

from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.edit.requirement import OPENENV_DISTS
from releaselib.files import write_atomic
from releaselib.records import Change, Lock
from releaselib.shell import Runner
from releaselib.stage.lock_files import (
    check_unused_uv_lock,
    exported_pins,
    relock_uv,
    short_line,
    stage_uv_lock,
    uv_error,
)
from releaselib.stage.lock_inputs import (
    LockInputs,
    gather,
    install_pythons,
    installs_at_run_time,
    installs_python,
    strings,
    table,
    unreadable_project,
)
from releaselib.stage.lock_tree import lock_tree, uv_projects
from releaselib.stage.relock_cache import cached_relock, keep_relock, relock_key

#: The Space's platform: Spaces build linux/amd64 images (glibc 2.36 in python:3.11-slim).
PLATFORM = "x86_64-manylinux_2_28"
RESOLVE_TIMEOUT = 300.0
#: Left out of the constraints: pip applies PIP_CONSTRAINT to the isolated environments it
#: builds sdists in too, where a build-system requirement (setuptools>=77) must not meet a pin.
BUILD_TOOLS = frozenset({"pip", "setuptools", "wheel"})
UV_VERSION = importlib.metadata.version("uv")


class Unlockable(Exception):
    """An env whose installs cannot be locked; the message is the reason."""


@dataclass(frozen=True)
class LockContext:
    """What every env's lock shares: the checkout and the commit (the release's resolved sha;
    a ref where none was resolved) OpenEnv's own dependencies come from, the cache folder and
    the runner."""

    repo: Path
    ref: str
    runner: Runner
    cache: Path | None = None

    def cache_dir(self) -> Path:
        return self.cache or Path(platformdirs.user_cache_dir("openenv-release")) / "locks"


def lock_env(
    stage_dir: Path, ctx: LockContext, *, env: str = "", uv_lock: Path | None = None
) -> tuple[Lock, list[Change]]:
    """Lock the staged tree ``stage_dir`` (its Dockerfile already rewritten): the lock record
    and the changes; an env that cannot be locked gets a record with the reason, never a
    partial lock. ``uv_lock`` is the env's own uv.lock, re-locked when a ``uv sync`` of the
    build installs a project (``lock_files``). StageError (naming file and line) for a lock
    file or constraint staging cannot honour."""
    df = Dockerfile.parse((stage_dir / "Dockerfile").read_text(encoding="utf-8"), "Dockerfile")
    runtime = installs_at_run_time(df)
    if runtime is not None:
        return Lock(unlocked=f"installs at run time ({short_line(runtime)})"), []
    if not installs_python(df, stage_dir):
        return Lock(unlocked="apt only (the Dockerfile installs no Python packages)"), []
    pythons = install_pythons(df)
    if len(pythons) > 1:
        shown = ", ".join(f"{v} ({', '.join(images)})" for v, images in sorted(pythons.items()))
        return Lock(unlocked=f"stages that install run different Pythons: {shown}"), []
    local = unreadable_project(df, stage_dir)
    if local is not None:
        return Lock(unlocked=f"installs a local package the lock cannot read: {local}"), []
    inputs = gather(df, stage_dir)
    notes = []
    if inputs.openenv:
        extra = openenv_dependencies(ctx, inputs.openenv_extras)
        if extra is None:
            notes.append(f"OpenEnv's own dependencies unlocked (no pyproject at {ctx.ref})")
        else:
            inputs.requirements += extra
    if inputs.unpinned:
        notes.append("direct URL requirements unlocked: " + ", ".join(sorted(set(inputs.unpinned))))
    if not inputs.requirements:
        why = "; ".join(notes) or "only OpenEnv and URL requirements"
        return Lock(unlocked=f"nothing to resolve ({why})"), []
    projects = uv_projects(df, stage_dir)
    if uv_lock is not None and projects:
        return relocked(stage_dir, df, inputs, ctx, env, uv_lock, projects[0], notes)
    if uv_lock is not None:
        check_unused_uv_lock(
            stage_dir,
            env,
            "no project a uv sync of the build installs was found to re-lock it against",
            remedy="install the project with `uv sync` (the release re-locks its uv.lock), or "
            "drop the setting that makes uv read the lock",
        )
    try:
        pins = resolve(inputs, ctx)
    except Unlockable as exc:
        return Lock(unlocked=str(exc)), []
    changes = lock_tree(stage_dir, df, pins)
    digest = hashlib.sha256(pins.encode()).hexdigest()[:16]
    count = sum(1 for line in pins.splitlines() if line and not line.startswith("#"))
    note = "; ".join(notes) or None
    return Lock(digest=digest, packages=count, python=inputs.python, note=note), changes


def relocked(
    stage_dir: Path,
    df: Dockerfile,
    inputs: LockInputs,
    ctx: LockContext,
    env: str,
    source: Path,
    pyproject: Path,
    notes: list[str],
) -> tuple[Lock, list[Change]]:
    """The env's own uv.lock, re-locked; its versions become the constraints of every other
    installer, and the lock is re-locked once more against the constrained pyproject, so that
    ``uv sync --frozen`` and ``--locked`` both take it."""
    project = pyproject.parent
    changes = [stage_uv_lock(source, project, stage_dir)]
    excluded = sorted(OPENENV_DISTS | BUILD_TOOLS | inputs.own | set(inputs.unpinned))
    key = relock_key(stage_dir, ctx.ref, excluded, UV_VERSION)
    kept = cached_relock(ctx.cache_dir(), key)
    if kept is None:
        relock_uv(project, repo=ctx.repo, runner=ctx.runner, env=env)
        pins = exported_pins(project, excluded, repo=ctx.repo, runner=ctx.runner)
    else:
        pins = kept[0]
    changes += lock_tree(stage_dir, df, pins, frozen=True)
    if kept is None:
        relock_uv(project, repo=ctx.repo, runner=ctx.runner, env=env)
        keep_relock(ctx.cache_dir(), key, pins, (project / "uv.lock").read_text("utf-8"))
    else:
        (project / "uv.lock").write_text(kept[1], encoding="utf-8")
    digest = hashlib.sha256(pins.encode()).hexdigest()[:16]
    others = [n for n in notes if not n.startswith("OpenEnv's own")]  # uv lock read OpenEnv's
    note = "; ".join(["the env's uv.lock re-locked", *others])
    count = len(pins.splitlines())
    return Lock(digest=digest, packages=count, python=inputs.python, note=note), changes


def resolve(inputs: LockInputs, ctx: LockContext) -> str:
    """The pinned versions (``name==version`` lines) for ``inputs``, from the cache or uv."""
    source = inputs.text()
    constraints = "".join(f"{c}\n" for c in sorted(set(inputs.constraints)))
    excluded = sorted(OPENENV_DISTS | BUILD_TOOLS | inputs.own | set(inputs.unpinned))
    key = digest_of(source, constraints, inputs.python, PLATFORM, UV_VERSION, *excluded)
    cached = ctx.cache_dir() / f"{key}.txt"
    if cached.is_file():
        return cached.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="openenv-release-lock-") as tmp:
        (Path(tmp) / "in.txt").write_text(source, encoding="utf-8")
        args = [uv.find_uv_bin(), "pip", "compile", "in.txt", "--python-version", inputs.python]
        args += ["--python-platform", PLATFORM, "--no-header", "--no-annotate", "--quiet"]
        args += [arg for name in excluded for arg in ("--no-emit-package", name)]
        if constraints:
            (Path(tmp) / "constraints.txt").write_text(constraints, encoding="utf-8")
            args += ["--constraint", "constraints.txt"]
        done = ctx.runner(args, cwd=Path(tmp), timeout=RESOLVE_TIMEOUT)
    if not done.ok:
        raise Unlockable(f"resolution failed: {uv_error(done.stderr, done.returncode)}")
    pins = "".join(f"{line}\n" for line in done.stdout.splitlines() if "==" in line)
    cached.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(cached, pins.encode("utf-8"))  # whole or not at all: releases share the cache
    return pins


def openenv_dependencies(ctx: LockContext, extras: Iterable[str]) -> list[str] | None:
    """OpenEnv's dependencies (and the requested extras') at the release ref, read with git
    from the checkout; None when the checkout lacks that ref or it has no pyproject."""
    done = ctx.runner(["git", "show", f"{ctx.ref}:pyproject.toml"], cwd=ctx.repo, timeout=30)
    if not done.ok:
        return None
    try:
        doc = tomllib.loads(done.stdout)
    except tomllib.TOMLDecodeError:
        return None
    found = list(strings(table(doc, "project").get("dependencies")))
    optional = table(doc, "project", "optional-dependencies")
    for extra in sorted(extras):
        found += strings(optional.get(extra))
    return found


def digest_of(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]
