"""The legacy ``src/core/`` layout some Dockerfiles still copy, recreated in a staged tree."""

from __future__ import annotations

import shutil
from pathlib import Path


def synthesize_legacy_core(stage_dir: Path) -> None:
    """Recreate ``src/core/`` (a copy of ``src/openenv/core``) for Dockerfiles that copy it."""
    core = stage_dir / "src" / "openenv" / "core"
    legacy = stage_dir / "src" / "core"
    if core.is_dir() and not legacy.exists():
        shutil.copytree(core, legacy)
