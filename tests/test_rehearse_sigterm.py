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


def processes_in(folder: Path, *, spaces_only: bool = False) -> list[int]:
    """Processes whose working directory is inside ``folder``; with ``spaces_only``, only Space
    processes (their environment has the ``PORT`` a Space is given), not the short-lived ones
    staging runs there (``uv pip compile`` when the lock cache is cold)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or not Path(os.readlink(entry / "cwd")).is_relative_to(folder):
                continue
            if spaces_only and b"\0PORT=" not in b"\0" + (entry / "environ").read_bytes():
                continue
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
        while not (spaces := processes_in(temp, spaces_only=True)) and proc.poll() is None:
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
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
