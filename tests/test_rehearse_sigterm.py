"""SIGTERM (a time-out, ``kill``, a cancelled CI job) ends a rehearsal as Ctrl-C does: its Space
processes stopped, its temp folder removed; exit 143."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import MAIN, waits


def processes_in(folder: Path) -> list[int]:
    """Processes whose working directory is inside ``folder``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and Path(os.readlink(entry / "cwd")).is_relative_to(folder):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.e2e
def test_sigterm_stops_the_space_processes_and_removes_the_temp_folder(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", MAIN, "rehearse", "--builder", "host"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + waits(300)  # a safety net: Spaces start within seconds
        while not processes_in(temp) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        spaces = processes_in(temp)
        if not spaces:  # say why: the rehearsal's own words so far (ended, or stopped here)
            running = proc.poll() is None
            if running:
                proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=waits(60))
            state = "still running, stopped" if running else f"exit {proc.returncode}"
            pytest.fail(f"no Space process started ({state}): {err[-3000:]}{out[-1000:]}")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=waits(120))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, err[-2000:]
    assert "terminated" in err and "Traceback" not in err
    assert processes_in(temp) == [] and list(temp.iterdir()) == []
