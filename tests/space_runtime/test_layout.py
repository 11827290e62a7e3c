"""The layout of the parts: production steps reach the Space runtime without the embedded Hub,
plugins see edits and records only, and the Dockerfile model stands without its rewrite."""

from __future__ import annotations

import json
import subprocess
import sys


def loaded(imports: str, prefix: str) -> list[str]:
    """The modules starting with ``prefix`` that a fresh Python has after ``import imports``."""
    code = (
        f"import json, sys, {imports}\n"
        f"print(json.dumps([m for m in sorted(sys.modules) if m.startswith({prefix!r})]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return list(json.loads(out.stdout))


def test_production_steps_never_import_the_embedded_hub() -> None:
    imports = "releaselib.space_runtime.containers, releaselib.stage.staged_checks, env_plugins._common"
    assert loaded(imports, "releaselib.localhub") == []


def test_plugins_need_only_edits_and_records() -> None:
    assert "releaselib.stage.stage_env" not in loaded("env_plugins._common", "releaselib.stage.stage_env")


def test_the_dockerfile_model_stands_without_the_staging_rewrite() -> None:
    assert loaded("releaselib.edit.dockerfile_model", "releaselib.edit.") == [
        "releaselib.edit.dockerfile_model"
    ]
