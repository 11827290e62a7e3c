"""Re-locked uv.lock files, cached like resolutions: an env whose staged tree, own uv.lock and
OpenEnv commit are unchanged costs no ``uv lock`` on the next release or rehearsal.

The key is a digest of everything ``uv lock`` could read: every file of the staged tree (the
env's own uv.lock, which staging copied into its project, included), the OpenEnv commit, the
names left out of the pins and uv's version. Only a full commit sha counts as an OpenEnv commit:
a branch moves, so a release against one (no release pins one: the ref is resolved once) is
never cached. What is kept is the pins the first ``uv lock`` gave and the uv.lock the second
wrote, as one JSON file written whole or not at all.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from releaselib.files import write_atomic
from releaselib.stage.refs import FULL_SHA
from releaselib.stage.staged_tree import walk_files


def relock_key(stage_dir: Path, ref: str, excluded: Sequence[str], uv_version: str) -> str | None:
    """The cache key of re-locking in ``stage_dir`` (before its lock is written), or None when
    ``ref`` is not a commit sha."""
    if not FULL_SHA.match(ref):
        return None
    digest = hashlib.sha256("\0".join(["uv-relock", ref, uv_version, *excluded]).encode())
    for path in sorted(walk_files(stage_dir)):  # sorted as paths: the keys kept so far hold
        digest.update(b"\0" + path.relative_to(stage_dir).as_posix().encode() + b"\0")
        with open(path, "rb") as file:  # in chunks: a large file is not held in memory
            digest.update(hashlib.file_digest(file, "sha256").digest())
    return digest.hexdigest()[:32]


def cached_relock(cache: Path, key: str | None) -> tuple[str, str] | None:
    """The pins and the final uv.lock kept under ``key``; None when there are none."""
    if key is None:
        return None
    try:
        kept = json.loads((cache / f"relock-{key}.json").read_text(encoding="utf-8"))
        pins, uv_lock = kept["pins"], kept["uv_lock"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(pins, str) or not isinstance(uv_lock, str) or not uv_lock.strip():
        return None  # not what keep_relock writes: re-lock
    return pins, uv_lock


def keep_relock(cache: Path, key: str | None, pins: str, uv_lock: str) -> None:
    """Keep ``pins`` and the final ``uv_lock`` under ``key`` (None: nothing is kept)."""
    if key is not None:
        cache.mkdir(parents=True, exist_ok=True)
        kept = json.dumps({"pins": pins, "uv_lock": uv_lock}).encode("utf-8")
        write_atomic(cache / f"relock-{key}.json", kept)
