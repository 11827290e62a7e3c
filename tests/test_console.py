"""Human output that must not look broken at a terminal's width."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

from rich.console import Console

from releaselib import console as out
from releaselib.options import Options, build_config

PROJECT = Path(__file__).resolve().parents[1]


def test_the_ls_remote_fallback_warning_is_one_line_at_80_columns(tmp_path: Path) -> None:
    remote = tmp_path / "a-remote-path-long-enough-to-push-the-warning-past-eighty-columns"
    head = subprocess.run(
        ["git", "-C", str(PROJECT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()  # examples/ is in this repository: its HEAD has their pyproject
    config, resolution = build_config(
        Options(
            repo=str(PROJECT / "examples"),
            remote=str(remote),
            ref=head,
            staging_dir=str(tmp_path / "s"),
        )
    )
    assert resolution.warning and len(resolution.warning) > 80
    buffer = io.StringIO()
    out.print_tuple(Console(file=buffer, width=80, highlight=False), config, resolution)
    assert f"warning: {resolution.warning}\n" in buffer.getvalue()
