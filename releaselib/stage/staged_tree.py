"""The staged trees this tool owns: the manifest beside each, the claim that refuses a folder
staging did not make, and the swap that puts a new tree in place.

A staged tree ``<env><suffix>`` stands beside ``<env><suffix>.manifest.json``, which lists every
file in it (git blob sha1 and size) and the tree's hash. Staging replaces only a folder whose
manifest of ours lists all it holds; the new tree is built in a temp folder beside it, and the
manifest goes in place first, so a tree never stands without its manifest. What a killed run
leaves beside a tree carries names only this tool makes, and the next run removes them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from releaselib.errors import StageError, UsageError, short

MANIFEST_SUFFIX = ".manifest.json"
#: What a manifest of this tool says it is; only a folder with one is ever replaced.
MANIFEST_TOOL = "openenv-release"
#: How the temp files and folders staging makes beside a staged tree start and end.
TEMP_PREFIX = ".openenv-release-tmp."
TEMP_TAIL = re.compile(r"(new|old|manifest)\.[a-z0-9_]{8}")


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
    for rel, path in walk_names(tree):
        with open(path, "rb") as file:
            data = file.read()
        manifest[rel] = (git_blob_sha1(data), len(data))
    return manifest


def walk_names(tree: Path) -> Iterator[tuple[str, str]]:
    """(relative posix path, path) of every file in ``tree``, in ``walk_files``' order, as
    strings: a staged tree has thousands of files, and paths as objects cost."""
    root = os.fspath(tree)
    cut = len(root) + 1
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            yield path[cut:].replace(os.sep, "/"), path


def manifest_hash(manifest: dict[str, tuple[str, int]]) -> str:
    return hashlib.sha256(json.dumps(sorted(manifest.items())).encode()).hexdigest()


def prepare_staging_dir(staging: Path, namespace: str | None = None) -> None:
    """Make the staging dir (with a ``.gitignore`` holding ``*``, when this creates it) and its
    namespace folder; UsageError naming the path when it is a file or cannot be written."""
    remedy = "pass a --staging-dir you can write to, outside envs/ and src/"
    try:
        try:
            staging.mkdir(parents=True)
            (staging / ".gitignore").write_text("# made by openenv-release\n*\n")
        except FileExistsError as exc:
            if not staging.is_dir():
                raise UsageError(
                    f"--staging-dir {staging}: a file, not a folder", remedy=remedy
                ) from exc
        folder = staging / namespace if namespace else staging
        folder.mkdir(exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except FileExistsError as exc:
        raise UsageError(f"{exc.filename}: a file where a folder should be", remedy=remedy) from exc
    except OSError as exc:
        where = exc.filename or staging
        raise UsageError(f"--staging-dir {where}: {exc.strerror or exc}", remedy=remedy) from exc


def claim(staged_dir: Path) -> None:
    """StageError unless ``staged_dir`` is free or a staged tree of this tool: a manifest of
    ours beside it that lists every file in it."""
    manifest = manifest_path(staged_dir)
    remedy = (
        f"move your files out and remove {staged_dir}, or pass another --staging-dir; "
        "staging replaces only trees it made"
    )
    if not staged_dir.exists() and not staged_dir.is_symlink():
        if manifest.exists() and read_manifest(manifest) is None:
            raise StageError(f"{manifest}: not a manifest of openenv-release", remedy=remedy)
        return
    is_folder = staged_dir.is_dir() and not staged_dir.is_symlink()
    listed = read_manifest(manifest) if is_folder else None
    if listed is None:
        raise StageError(
            f"{staged_dir}: a folder staging did not make (no manifest of ours beside it)",
            remedy=remedy,
        )
    extra = sorted(set(build_manifest_names(staged_dir)) - set(listed))
    if extra:
        raise StageError(
            f"{staged_dir}: holds files staging did not write ({', '.join(map(short, extra[:3]))})",
            remedy=remedy,
        )


def read_manifest(path: Path) -> dict[str, Any] | None:
    """The files a manifest of this tool lists, or None if ``path`` is not one."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        return None
    if data.get("tool") != MANIFEST_TOOL or "hash" not in data:
        return None
    return dict(data["files"])


def build_manifest_names(tree: Path) -> list[str]:
    return [rel for rel, _ in walk_names(tree)]


def temp_prefix(final_dir: Path, kind: str) -> str:
    """The name start of a temp file or folder beside ``final_dir``: ``kind`` is new (a tree
    being built), old (the tree it replaces) or manifest."""
    return f"{TEMP_PREFIX}{final_dir.name}.{kind}."


def remove_leftovers(final_dir: Path) -> None:
    """Remove what a killed run left beside ``final_dir``: only names this tool makes."""
    start = f"{TEMP_PREFIX}{final_dir.name}."
    for entry in final_dir.parent.iterdir():
        if entry.name.startswith(start) and TEMP_TAIL.fullmatch(entry.name[len(start) :]):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()


def install(work: Path, final_dir: Path, manifest: dict[str, tuple[str, int]], digest: str) -> None:
    """Put the manifest, then the tree built at ``work``, in place of ``final_dir``'s, so a tree
    never stands without its manifest; on an OS error the old manifest is put back."""
    target = manifest_path(final_dir)
    before = target.read_bytes() if target.is_file() else None
    data = {
        "tool": MANIFEST_TOOL,
        "hash": digest,
        "files": {path: {"sha1": sha, "size": size} for path, (sha, size) in manifest.items()},
    }
    write_atomic(target, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode(), final_dir)
    try:
        replace_tree(work, final_dir)
    except OSError:
        if before is None:
            target.unlink(missing_ok=True)
        else:
            write_atomic(target, before, final_dir)
        raise


def write_atomic(target: Path, data: bytes, final_dir: Path) -> None:
    """Write ``target`` through a temp file beside it, then a rename."""
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(final_dir, "manifest"), dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, target)
    except OSError:
        os.unlink(tmp)
        raise


def replace_tree(work: Path, final_dir: Path) -> None:
    """Put the tree built at ``work`` in place of ``final_dir`` by renames (the old tree, if
    any, is moved aside first and removed after)."""
    if not final_dir.exists():
        work.rename(final_dir)
        return
    old = Path(tempfile.mkdtemp(prefix=temp_prefix(final_dir, "old"), dir=final_dir.parent))
    final_dir.rename(old)
    try:
        work.rename(final_dir)
    except OSError:
        old.rename(final_dir)
        raise
    shutil.rmtree(old, ignore_errors=True)


def manifest_path(staged_dir: Path) -> Path:
    return staged_dir.with_name(staged_dir.name + MANIFEST_SUFFIX)
