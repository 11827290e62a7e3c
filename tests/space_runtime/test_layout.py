"""The Space runtime is its own package: production steps reach it without the embedded Hub."""

from __future__ import annotations

import subprocess
import sys


def test_production_steps_never_import_the_embedded_hub() -> None:
    code = (
        "import sys, releaselib.containers, releaselib.staged_checks, env_plugins._common\n"
        "print(sorted(m for m in sys.modules if m.startswith('releaselib.localhub')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_plugins_need_only_edits_and_records() -> None:
    code = "import sys, env_plugins._common\nprint('releaselib.stage' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
