"""Build one env's staged Space tree, as Spaces builds need it, plus its manifest.

Layout: ``src/``, ``envs/<env>/``, the env's files at the root (its pyproject.toml wins over the
checkout's root one), a rewritten ``Dockerfile`` and ``README.md`` at the root, and legacy
``src/core/`` only for Dockerfiles that copy it. The checkout is only read.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from releaselib.config import ReleaseConfig
from releaselib.edit import deps, readme
from releaselib.edit.dockerfile import Dockerfile, rewrite_for_space
from releaselib.edit.legacy_core import synthesize_legacy_core
from releaselib.errors import ReleaseError, StageError
from releaselib.plugins import Owned, PluginRegistry
from releaselib.records import Change, Check, EnvSpec, Finding, Fix, StagedSpace

SKIP_DIRS = frozenset(
    {
        ".venv",
        "venv",
        ".git",
        "__pycache__",
        ".pytest_cache",
        ".ruff_cache",
        ".mypy_cache",
        "node_modules",
        ".tox",
        ".nox",
    }
)
SKIP_FILES = frozenset({".DS_Store", "uv.lock"})
SKIP_SUFFIXES = (".pyc", ".pyo")
#: Files that look like credentials (fnmatch on the lower-cased name, or on the last folders and
#: the name when the pattern has a '/'): never staged, and each one left out is recorded.
CREDENTIALS = (
    ".env*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    "credentials*.json",
    ".aws/credentials",
    ".ssh/*",
    ".huggingface/*token*",
    ".cache/huggingface/*token*",
)
CREDENTIALS_WHY = "credentials are never staged"
MANIFEST_SUFFIX = ".manifest.json"
#: The largest file a staged tree may hold. The Hub takes larger files only through LFS/Xet, and
#: Spaces build and restart slowly with big repos; data and checkpoints belong in a Hub dataset
#: or model repo that the env downloads at startup.
MAX_FILE_BYTES = 50_000_000


def junk(name: str, is_dir: bool) -> bool:
    """True for build junk and locks that never go into a Space."""
    if is_dir:
        return name in SKIP_DIRS
    return name in SKIP_FILES or name.endswith(SKIP_SUFFIXES)


def credentials(rel: Path) -> bool:
    """True if the file at ``rel`` (relative to the folder being copied) looks like credentials."""
    parts = [part.lower() for part in rel.parts]
    for pattern in CREDENTIALS:
        depth = pattern.count("/") + 1
        if len(parts) >= depth and fnmatch.fnmatchcase("/".join(parts[-depth:]), pattern):
            return True
    return False


def copy_tree(source: Path, dest: Path, *, root: Path) -> list[Path]:
    """Copy ``source`` into ``dest`` without junk and credentials; return the credential files
    left out (as paths under ``dest``). Symlinks are followed only when they stay inside
    ``root`` (the checkout), else StageError."""
    left_out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(source, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not junk(d, True))
        target_dir = dest / here.relative_to(source)
        target_dir.mkdir(parents=True, exist_ok=True)
        for name in dirnames:
            if (here / name).is_symlink():
                inside(here / name, root)
                left_out += copy_tree((here / name).resolve(), target_dir / name, root=root)
        for name in sorted(filenames):
            path = here / name
            if junk(name, False):
                continue
            if credentials(path.relative_to(source)):
                left_out.append(target_dir / name)
                continue
            if path.is_symlink():
                inside(path, root)
            shutil.copyfile(path, target_dir / name)
    return left_out


def inside(link: Path, root: Path) -> None:
    """Refuse a symlink whose target leaves ``root``."""
    target = link.resolve()
    if not target.is_relative_to(root.resolve()):
        raise StageError(
            f"{link}: symlink points outside the checkout ({target})",
            remedy="replace it with a real file or a link inside the checkout",
        )


def git_blob_sha1(data: bytes) -> str:
    """The git blob id of ``data`` (what the Hub reports as a regular file's oid)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def walk_files(tree: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames.sort()
        for name in sorted(filenames):
            yield Path(dirpath) / name


def build_manifest(tree: Path) -> dict[str, tuple[str, int]]:
    """``relative posix path -> (git blob sha1, size)`` for every file in ``tree``."""
    manifest: dict[str, tuple[str, int]] = {}
    for path in walk_files(tree):
        data = path.read_bytes()
        manifest[path.relative_to(tree).as_posix()] = (git_blob_sha1(data), len(data))
    return manifest


def manifest_hash(manifest: dict[str, tuple[str, int]]) -> str:
    return hashlib.sha256(json.dumps(sorted(manifest.items())).encode()).hexdigest()


def read_text(path: Path, stage_dir: Path) -> str:
    """A staged text file's content; a non-UTF-8 file is a StageError naming it."""
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        rel = path.relative_to(stage_dir)
        raise StageError(
            f"{rel}: not UTF-8 (byte {exc.start})", remedy="save the file as UTF-8 in the checkout"
        ) from exc


def rewrite_file(
    path: Path, stage_dir: Path, rewrite: Callable[[str, str], tuple[str, Sequence[Change]]]
) -> list[Change]:
    """Apply ``rewrite(text, relpath)`` to one staged file, writing it back only if it changed."""
    rel = path.relative_to(stage_dir).as_posix()
    text = read_text(path, stage_dir)
    new, changes = rewrite(text, rel)
    if new != text:
        path.write_bytes(new.encode("utf-8"))
    return list(changes)


def copies_legacy_core(dockerfile: Dockerfile) -> bool:
    return any(
        source.rstrip("/") in {"src/core", "./src/core"}
        for stage in dockerfile.stages
        for c in dockerfile.copies(stage)
        if c.from_ is None
        for source in c.sources
    )


def lay_out(spec: EnvSpec, repo: Path, stage_dir: Path) -> list[Change]:
    """Copy the checkout's parts into an empty ``stage_dir``; a Change per credential file
    left out, named by its path in the checkout."""
    left_out = []
    if (repo / "src").is_dir():
        left_out += copy_tree(repo / "src", stage_dir / "src", root=repo)
    left_out += copy_tree(spec.path, stage_dir / "envs" / spec.name, root=repo)
    copy_tree(spec.path, stage_dir, root=repo)  # the same files again, at the root
    if not (stage_dir / "pyproject.toml").exists() and (repo / "pyproject.toml").is_file():
        shutil.copyfile(repo / "pyproject.toml", stage_dir / "pyproject.toml")
    return [
        Change(path.relative_to(stage_dir).as_posix(), None, path.name, "", CREDENTIALS_WHY)
        for path in left_out
    ]


def check_sizes(stage_dir: Path) -> None:
    """StageError naming the first staged file over MAX_FILE_BYTES, if any."""
    sizes = ((p, p.stat().st_size) for p in walk_files(stage_dir))
    big = [(p, size) for p, size in sizes if size > MAX_FILE_BYTES]
    if big:
        path, size = big[0]
        more = f" (and {len(big) - 1} more)" if len(big) > 1 else ""
        raise StageError(
            f"{path.relative_to(stage_dir).as_posix()} is {size / 1e6:,.1f} MB{more}, over the "
            f"{MAX_FILE_BYTES / 1e6:g} MB limit for a staged file",
            remedy="drop it with a plugin fix (openenv-release plugin.new), or host it in a Hub "
            "dataset and download it at startup",
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


@functools.lru_cache(maxsize=64)
def pinned_pyproject(text: str, path: str, dist: str, ref: str) -> tuple[str, tuple[Change, ...]]:
    """deps.rewrite_pyproject, memoised: the env's pyproject is staged twice and tomlkit is slow."""
    new, changes = deps.rewrite_pyproject(text, path=path, dist=dist, ref=ref)
    return new, tuple(changes)


def rewrite_staged(config: ReleaseConfig, spec: EnvSpec, stage_dir: Path) -> list[Change]:
    """The release's rewrites of pyprojects, requirements, Dockerfile and README."""
    changes: list[Change] = []
    pin = {"dist": config.dist, "ref": config.ref}
    for pyproject in (
        stage_dir / "pyproject.toml",
        stage_dir / "envs" / spec.name / "pyproject.toml",
    ):
        if pyproject.is_file():
            changes += rewrite_file(
                pyproject,
                stage_dir,
                lambda t, p: pinned_pyproject(t, p, **pin),
            )
    for requirements in sorted(stage_dir.rglob("requirements*.txt")):
        if requirements.relative_to(stage_dir).parts[0] != "src":
            changes += rewrite_file(
                requirements,
                stage_dir,
                lambda t, p: deps.rewrite_requirements_txt(t, path=p, **pin),
            )
    assert spec.dockerfile is not None
    dockerfile_path = stage_dir / "Dockerfile"
    source_rel = spec.dockerfile.relative_to(spec.path).as_posix()
    text = read_text(stage_dir / source_rel, stage_dir)
    Dockerfile.parse(text, f"envs/{spec.name}/{source_rel}")  # errors name the checkout's file
    new, dockerfile_changes = rewrite_for_space(  # change lines are lines of the staged file
        text, path="Dockerfile", base_image=config.base_image, **pin
    )
    dockerfile_path.write_bytes(new.encode("utf-8"))
    changes += dockerfile_changes
    if copies_legacy_core(Dockerfile.parse(new, "Dockerfile")):
        synthesize_legacy_core(stage_dir)
    changes += stage_readme(config, spec, stage_dir)
    return changes


def stage_readme(config: ReleaseConfig, spec: EnvSpec, stage_dir: Path) -> list[Change]:
    readme_path = stage_dir / "README.md"
    source = read_text(readme_path, stage_dir) if readme_path.is_file() else None
    text, changes = readme.build_space_readme(
        source,
        path="README.md",
        env=spec.name,
        space_id=config.space_id(spec.name),
        version=config.version,
        ref=config.ref,
        hub_tag=config.hub_tag,
        app_port=readme.read_app_port(spec.path),
        client_class=readme.find_client_class(spec.path),
    )
    readme_path.write_bytes(text.encode("utf-8"))
    return changes


def stage_env(config: ReleaseConfig, spec: EnvSpec, registry: PluginRegistry) -> StagedSpace:
    """Stage one env. Failures are returned as a record (``ok=False``), never raised."""
    space_id = config.space_id(spec.name)
    final_dir = config.staging_dir / config.namespace / f"{spec.name}{config.suffix}"
    base = StagedSpace(env=spec.name, space_id=space_id, staged_dir=final_dir, ok=False)
    if not spec.deployable:
        return replace(base, error=f"{spec.name}: not deployable ({spec.reason})")
    final_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{spec.name}.", dir=final_dir.parent))
    fixes: list[str] = []
    findings: list[Finding] = []
    checks: list[str] = []
    try:
        changes = lay_out(spec, config.repo, work)
        changes += rewrite_staged(config, spec, work)
        for fix in registry.fixes(spec.name):
            with plugin_failures(fix):
                done = fix.record.apply(work)
            if done:
                fixes.append(fix.record.name)
        check_sizes(work)
        for check in registry.checks():
            with plugin_failures(check):
                found = list(check.record.run(work))
            checks.append(f"{check.record.name}:{'fail' if found else 'ok'}")
            findings += found
    except ReleaseError as exc:
        shutil.rmtree(work, ignore_errors=True)
        return replace(base, error=f"{spec.name}: {exc.one_line()}")
    except OSError as exc:
        shutil.rmtree(work, ignore_errors=True)
        return replace(base, error=f"{spec.name}: {exc}")
    shutil.rmtree(final_dir, ignore_errors=True)
    work.rename(final_dir)
    manifest = build_manifest(final_dir)
    digest = manifest_hash(manifest)
    write_manifest(final_dir, manifest, digest)
    error = "; ".join(str(f) for f in findings) or None
    return StagedSpace(
        env=spec.name,
        space_id=space_id,
        staged_dir=final_dir,
        ok=not findings,
        manifest=manifest,
        manifest_hash=digest,
        fixes=tuple(fixes),
        checks=tuple(checks),
        findings=tuple(findings),
        changes=tuple(changes),
        error=f"{spec.name}: {error}" if error else None,
    )


def manifest_path(staged_dir: Path) -> Path:
    return staged_dir.with_name(staged_dir.name + MANIFEST_SUFFIX)


def write_manifest(staged_dir: Path, manifest: dict[str, tuple[str, int]], digest: str) -> None:
    """Write the manifest beside the tree, atomically."""
    data = {
        "hash": digest,
        "files": {path: {"sha1": sha, "size": size} for path, (sha, size) in manifest.items()},
    }
    target = manifest_path(staged_dir)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(target)


def stage_envs(
    config: ReleaseConfig, specs: Iterable[EnvSpec], registry: PluginRegistry
) -> list[StagedSpace]:
    """Stage every env in ``specs``; one failing env never stops the others. Two plugins
    claiming one env is a PluginError before anything is staged."""
    registry.profiles()
    return [stage_env(config, spec, registry) for spec in specs]
