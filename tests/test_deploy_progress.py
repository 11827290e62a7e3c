"""deploy's progress: a live table on a terminal, else one plain line per event on stderr."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path

from rich.console import Console

from releaselib.console import ProgressBoard
from tests.helpers import cli, offline

EXAMPLE_ENV = Path(__file__).resolve().parents[1] / "examples" / "envs" / "echo_env"
SPACE = "openenv/alpha_env-0.2.2"


def deploy(localhub, tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    repo = tmp_path / "OpenEnv"
    if not repo.exists():
        (repo / "envs").mkdir(parents=True)
        (repo / "pyproject.toml").write_text('[project]\nname = "openenv"\nversion = "0.2.2"\n')
        shutil.copytree(EXAMPLE_ENV, repo / "envs" / "alpha_env")
    env = {**os.environ, **localhub.client_env(), **offline(tmp_path)}
    args = ["deploy", "--repo", str(repo), "--staging-dir", str(tmp_path / "staging"), *flags]
    return cli(*args, env=env)


def events(stderr: str) -> list[str]:
    prefix = f"deploy {SPACE}: "
    return [line.removeprefix(prefix) for line in stderr.splitlines() if line.startswith(prefix)]


def test_without_a_terminal_each_event_is_one_line_on_stderr_and_json_stays_clean(localhub, tmp_path: Path) -> None:
    first = deploy(localhub, tmp_path, "--json")
    assert first.returncode == 0, first.stderr
    [result] = json.loads(first.stdout)["envs"]
    staging, staged, uploading, committed = events(first.stderr)
    assert (staging, staged) == ("staging", "staged")
    assert uploading == f"uploading {result['files_sent']} files, {result['bytes_sent']:,} bytes"
    assert committed == f"created, committed {result['commit'][:12]}"

    again = deploy(localhub, tmp_path)
    assert again.returncode == 0, again.stderr
    assert events(again.stderr) == ["staging", "staged", "unchanged"]
    assert "deploy openenv/" not in again.stdout


def test_on_a_terminal_the_board_is_a_live_table_with_one_row_per_space(capsys) -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100)
    with ProgressBoard(console, [SPACE, "openenv/beta_env-0.2.2"], live=True) as board:
        board.update(SPACE, "uploading 3 files, 1,024 bytes")
        board.update("openenv/beta_env-0.2.2", "unchanged")
        Console(file=(shown := io.StringIO()), width=100).print(board.render())
    assert capsys.readouterr().err == ""  # no plain lines on a terminal
    rows = [line.split() for line in shown.getvalue().splitlines()]
    assert [SPACE, "uploading", "3", "files,", "1,024", "bytes"] in [r[:6] for r in rows]
    assert ["openenv/beta_env-0.2.2", "unchanged"] in [r[:2] for r in rows]
    assert all(r[-1] == "s" for r in rows if r and r[0].startswith("openenv/"))  # time in stage
