"""Build one env's staged Space tree, as Spaces builds need it: its sources
(``releaselib.stage.sources``), secret scan (``secret_gate``), rewrites (``staged_rewrites``),
plugin fixes and checks; its manifest, claim and swap are ``releaselib.stage.staged_tree``.

Layout: ``src/``, ``envs/<env>/``, the env's files at the root (its pyproject.toml wins over the
checkout's root one), a rewritten ``Dockerfile`` and ``README.md`` at the root, and legacy
``src/core/`` only for Dockerfiles that copy it. The checkout is only read.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from releaselib.config import ReleaseConfig
from releaselib.errors import ReleaseError, StageError, redact, short
from releaselib.options import check_staging_dir
from releaselib.plugins import Owned, PluginRegistry
from releaselib.records import (
    AllowedSecret,
    AppliedFix,
    Check,
    EnvSpec,
    Finding,
    Fix,
    Lock,
    StagedSpace,
)
from releaselib.shell import Runner
from releaselib.shell import run as default_run
from releaselib.stage.gitfiles import GitFiles, list_files
from releaselib.stage.lock import LockContext, lock_env
from releaselib.stage.lock_files import (
    check_missing_uv_lock,
    check_poetry_locks,
    check_unused_uv_lock,
)
from releaselib.stage.lock_tree import shifted
from releaselib.stage.secret_gate import scan_secrets
from releaselib.stage.shared_files import Pooled, SharedFiles
from releaselib.stage.sources import STAGED_PATHS, Sources, lay_out, sources
from releaselib.stage.staged_rewrites import rewrite_staged
from releaselib.stage.staged_tree import (
    build_manifest,
    claim,
    install,
    manifest_hash,
    prepare_staging_dir,
    remove_leftovers,
    temp_prefix,
    walk_names,
)

if TYPE_CHECKING:
    from releaselib.stage.scan_cache import ContentScan

#: The largest file a staged tree may hold. The Hub takes larger files only through LFS/Xet, and
#: Spaces build and restart slowly with big repos; data and checkpoints belong in a Hub dataset
#: or model repo that the env downloads at startup.
MAX_FILE_BYTES = 50_000_000


@dataclass
class StageRun:
    """What the envs of one staging run share: the checkout's git listing, the secret
    scanner's memory, the pooled ``src/`` files, the secrets allowed by ``--allow-secret``, and
    whether to lock each env's dependencies (``--no-lock`` opts out; ``lock_cache`` overrides
    the user's cache)."""

    allowed: tuple[AllowedSecret, ...] = ()
    runner: Runner = default_run
    lock: bool = True
    lock_cache: Path | None = None
    _listings: dict[Path, GitFiles | None] = field(default_factory=dict)
    _scanner: ContentScan | None = None
    _shared: dict[Path, SharedFiles] = field(default_factory=dict)

    def listing(self, repo: Path) -> GitFiles | None:
        """What git tracks under envs/, src/ and the root pyproject; None outside git."""
        if repo not in self._listings:
            self._listings[repo] = list_files(repo, STAGED_PATHS, self.runner)
        return self._listings[repo]

    def shared(self, folder: Path) -> SharedFiles:
        """The pool of files the staged trees in ``folder`` share (``src/``)."""
        if folder not in self._shared:
            self._shared[folder] = SharedFiles(folder)
        return self._shared[folder]

    def scanner(self) -> ContentScan:
        if self._scanner is None:
            from releaselib.stage.scan_cache import ContentScan

            self._scanner = ContentScan()
        return self._scanner


def check_sizes(stage_dir: Path) -> None:
    """StageError naming the first staged file over MAX_FILE_BYTES, if any; an env's file is
    named once, by its path under ``envs/`` (the checkout's), not again at the root."""
    sizes = [(rel, os.stat(path).st_size) for rel, path in walk_names(stage_dir)]
    named = {
        rel.split("/", 2)[2]  # the root copy of a big envs/<env>/ file
        for rel, size in sizes
        if rel.startswith("envs/") and rel.count("/") > 1 and size > MAX_FILE_BYTES
    }
    refuse_oversized(sorted((rel, size) for rel, size in sizes if rel not in named))


def source_sizes(found: Sources) -> list[tuple[str, int]]:
    """(checkout path, size) of each file ``found``, from a stat alone: an env no fix changes
    is refused on them before they are read (a checkpoint of gigabytes, scanned as three
    decodings, would take hours)."""
    return [(rel, path.stat().st_size) for rel, path in sorted(found.scanned.items())]


def refuse_oversized(sizes: list[tuple[str, int]], *, scanned: bool = True) -> None:
    """StageError naming the first file over MAX_FILE_BYTES in ``sizes``, if any."""
    big = [(rel, size) for rel, size in sizes if size > MAX_FILE_BYTES]
    if big:
        rel, size = big[0]
        more = f" (and {len(big) - 1} more)" if len(big) > 1 else ""
        unread = "" if scanned else " (not scanned for secrets)"
        check = "" if scanned else "check it for secrets, then "
        drop = (  # src/ is staged into every env: one fix per env would be the wrong advice
            "take it out of src/ in the checkout (every env stages src/)"
            if rel.startswith("src/")
            else "drop it with a plugin fix (openenv-release plugin.new)"
        )
        raise StageError(
            f"{rel} is {size / 1e6:,.1f} MB{more}, over the "
            f"{MAX_FILE_BYTES / 1e6:g} MB limit for a staged file{unread}",
            remedy=f"{drop}, or {check}host it in a Hub dataset and download it at startup",
        )


@contextmanager
def plugin_failures(owned: Owned[Fix] | Owned[Check]) -> Iterator[None]:
    """Turn what a plugin's fix or check raises into a StageError naming it."""
    try:
        yield
    except ReleaseError:
        raise
    except Exception as exc:
        kind = "fix" if isinstance(owned.record, Fix) else "check"
        raise StageError(
            f"{kind} {owned.record.name} of plugin {owned.plugin} failed: "
            f"{type(exc).__name__}: {exc}",
            remedy="fix the plugin or disable it with OPENENV_RELEASE_DISABLE_PLUGINS",
        ) from exc


def stage_env(
    config: ReleaseConfig, spec: EnvSpec, registry: PluginRegistry, run: StageRun | None = None
) -> StagedSpace:
    """Stage one env. Its failures are returned as a record (``ok=False``), never raised; a
    staging dir that cannot be written is a UsageError."""
    run = run or StageRun()
    space_id = config.space_id(spec.name)
    final_dir = config.staging_dir / config.namespace / f"{spec.name}{config.suffix}"
    base = StagedSpace(env=spec.name, space_id=space_id, staged_dir=final_dir, ok=False)
    if not spec.deployable:
        return replace(base, error=f"{spec.name}: not deployable ({spec.reason})")
    prepare_staging_dir(config.staging_dir, config.namespace)
    listing = None
    work = None
    shared: SharedFiles | None = None
    linked: dict[str, Pooled] = {}
    fixes: list[AppliedFix] = []
    lock = Lock(unlocked="--no-lock")
    findings: list[Finding] = []
    checks: list[str] = []
    try:
        listing = run.listing(config.repo)
        base = replace(base, git=listing is not None)
        found = sources(spec, config.repo, listing, run.scanner())
        base = replace(base, modified=found.modified, untracked=found.untracked)
        env_fixes = registry.fixes(spec.name)
        if not env_fixes:  # with fixes, one may drop the file: it is scanned as any other
            refuse_oversized(source_sizes(found), scanned=False)
        allowed = [Owned("--allow-secret", a) for a in run.allowed]
        allowed += registry.allowed_secrets(spec.name)
        passed = scan_secrets(found, run.scanner(), allowed)
        base = replace(base, allowed_secrets=passed)
        claim(final_dir)
        remove_leftovers(final_dir)
        work = Path(tempfile.mkdtemp(prefix=temp_prefix(final_dir, "new"), dir=final_dir.parent))
        # a fix may edit any file in place: a tree it runs on gets copies of its own
        shared = None if env_fixes else run.shared(final_dir.parent)
        changes, linked = lay_out(found, work, shared)
        changes += rewrite_staged(config, spec, work)
        check_poetry_locks(work, changes, spec.name)
        for fix in env_fixes:
            with plugin_failures(fix):
                done = fix.record.apply(work)
            if done:
                # plugin text goes into the ledger and the briefing: one line, no Hub token
                did = short(redact(done), 160)
                fixes.append(AppliedFix(fix.record.name, short(redact(fix.record.why), 160), did))
        own = spec.path / "uv.lock"
        uv_lock = own if own.is_file() else None
        if spec.dockerfile and not any(spec.path.rglob("uv.lock")):
            rel = spec.dockerfile.relative_to(spec.path).as_posix()
            check_missing_uv_lock(work / rel, f"envs/{spec.name}/{rel}")
        if run.lock:
            pinned = config.sha or config.ref  # the commit the pins name, however far ref moved
            context = LockContext(config.repo, pinned, run.runner, run.lock_cache)
            lock, lock_changes = lock_env(work, context, env=spec.name, uv_lock=uv_lock)
            changes = [*shifted(changes, lock_changes), *lock_changes]
        elif uv_lock is not None:
            check_unused_uv_lock(
                work,
                spec.name,
                "--no-lock leaves it out (it would be stale)",
                remedy="stage without --no-lock, so the release re-locks it, or make the build "
                "resolve without it",
            )

        check_sizes(work)
        for check in registry.checks():
            with plugin_failures(check):
                found_now = list(check.record.run(work))
            checks.append(f"{check.record.name}:{'fail' if found_now else 'ok'}")
            findings += found_now
        manifest = build_manifest(work)
        check_links(linked, shared)
        digest = manifest_hash(manifest)
        install(work, final_dir, manifest, digest)
        if shared is not None:
            shared.installed(final_dir, linked)
            linked = {}
    except ReleaseError as exc:
        return replace(base, error=f"{spec.name}: {exc.one_line()}")
    except OSError as exc:
        return replace(base, error=f"{spec.name}: {os_error(exc, config.repo, work)}")
    finally:
        if shared is not None and linked and work is not None:
            shared.written_through(linked)  # failed after a plugin ran: mend
        if work is not None and work.exists():
            shutil.rmtree(work, ignore_errors=True)
    error = "; ".join(str(f) for f in findings) or None
    return replace(
        base,
        ok=not findings,
        manifest=manifest,
        manifest_hash=digest,
        fixes=tuple(fixes),
        checks=tuple(checks),
        findings=tuple(findings),
        changes=tuple(changes),
        error=f"{spec.name}: {error}" if error else None,
        lock=lock,
    )


def check_links(linked: dict[str, Pooled], shared: SharedFiles | None) -> None:
    """StageError naming a ``src/`` file that changed in place while its tree was staged (a
    plugin check wrote it, though checks only read): the trees staged before, which linked the
    same file, get back the content they were staged with."""
    bad = shared.written_through(linked) if shared is not None else []
    if bad:
        linked.clear()
        raise StageError(
            f"{bad[0]} changed in place while staging (the trees staged before got it back as "
            "staged)",
            remedy="make the plugin check that wrote it only read (a fix replaces files), then "
            "stage again",
        )


def os_error(exc: OSError, repo: Path, work: Path | None) -> str:
    """One line for what the OS refused: the path (in the checkout or the staged tree,
    shortened) and why."""
    name = str(exc.filename or "")
    for root in (work, repo):
        if root is not None and name.startswith(f"{root}/"):
            name = name[len(str(root)) + 1 :]
            break
    return f"{short(name)}: {exc.strerror or exc}" if name else short(str(exc), 160)


def stage_envs(
    config: ReleaseConfig,
    specs: Iterable[EnvSpec],
    registry: PluginRegistry,
    run: StageRun | None = None,
) -> list[StagedSpace]:
    """Stage every env in ``specs``; one failing env never stops the others. Two plugins
    claiming one env is a PluginError, and a staging dir that cannot be written, or that is
    inside what staging reads, a UsageError, before anything is staged."""
    registry.profiles()
    check_staging_dir(config.staging_dir, config.repo)
    prepare_staging_dir(config.staging_dir, config.namespace)
    run = run or StageRun()
    return [stage_env(config, spec, registry, run) for spec in specs]
