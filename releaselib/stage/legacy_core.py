"""The legacy ``src/core/`` layout some Dockerfiles still copy, recreated in a staged tree."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from releaselib.edit.dockerfile_model import Dockerfile


def copies_legacy_core(dockerfile: Dockerfile) -> bool:
    """True if a stage copies the legacy ``src/core`` from the build context."""
    return any(
        source.rstrip("/") in {"src/core", "./src/core"}
        for stage in dockerfile.stages
        for c in dockerfile.copies(stage)
        if c.from_ is None
        for source in c.sources
    )


def synthesize_legacy_core(stage_dir: Path) -> None:
    """Recreate ``src/core/`` (a copy of ``src/openenv/core``) for Dockerfiles that copy it."""
    core = stage_dir / "src" / "openenv" / "core"
    legacy = stage_dir / "src" / "core"
    if core.is_dir() and not legacy.exists():
        shutil.copytree(core, legacy)
