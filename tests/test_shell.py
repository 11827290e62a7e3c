"""The one process runner: a command over its time-out, and servers left running at exit, are
killed with their whole process group."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from releaselib import shell

WAIT_FACTOR = float(os.environ.get("OPENENV_RELEASE_TEST_WAIT_FACTOR", "1"))


def gone(pid: int, within: float = 5.0) -> bool:
    """True once ``pid`` no longer runs (a zombie waiting for its parent counts as gone)."""
    deadline = time.monotonic() + within * WAIT_FACTOR
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_a_logged_command_over_its_time_out_is_killed_with_its_children(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    with log.open("w") as out:
        code = shell.run_to(
            ["sh", "-c", "sleep 60 & echo child $!; wait"], out, timeout=0.5 * WAIT_FACTOR
        )
    assert code is None
    child = int(log.read_text().split()[1])
    assert gone(child)


def test_a_logged_command_that_finishes_returns_its_status_and_output(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    with log.open("w") as out:
        code = shell.run_to(["sh", "-c", "echo built; echo warned >&2; exit 3"], out, timeout=30)
    assert code == 3
    assert log.read_text().split() == ["built", "warned"]


def test_a_server_still_running_when_this_process_exits_is_killed() -> None:
    code = (
        "import subprocess\n"
        "from releaselib import shell\n"
        "server = shell.start(['sleep', '60'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print(server.pid, flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert gone(int(done.stdout.split()[0]))


def test_stop_ends_the_whole_group(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with log.open("w") as out:
        server = shell.start(["sh", "-c", "sleep 60 & echo child $!; wait"], stdout=out, stderr=out)
    deadline = time.monotonic() + 5 * WAIT_FACTOR
    while "child" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(log.read_text().split()[1])
    shell.stop(server, timeout=5)
    assert server.poll() is not None and gone(child)
