"""``staged_run`` tells why a server did not answer: the tail of its output, and --start-timeout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from releaselib.stage.staged_checks import OUTPUT_LINES, run_staged
from releaselib.verify.probe import Outcome

WAIT = float(os.environ.get("OPENENV_RELEASE_TEST_WAIT_FACTOR", "1"))
#: A server that logs 60 numbered lines to stdout, one to stderr, then never listens (or exits).
CHATTY = """\
import sys, time
for i in range(60):
    print(f"boot step {i}", flush=True)
print("still loading the model", file=sys.stderr, flush=True)
if sys.argv[1:] == ["exit"]:
    sys.exit(3)
time.sleep(120)
"""


def tree(tmp_path: Path, *args: str) -> Path:
    (tmp_path / "server.py").write_text(CHATTY)
    argv = ", ".join(f'"{a}"' for a in ("python", "/app/server.py", *args))
    (tmp_path / "Dockerfile").write_text(
        f"FROM python:3.11-slim\nWORKDIR /app\nCOPY server.py /app/server.py\nCMD [{argv}]\n"
    )
    return tmp_path


def test_a_server_that_never_listens_shows_the_last_40_lines_and_the_flag(tmp_path: Path) -> None:
    report = run_staged("chatty_env", tree(tmp_path), start_timeout=1.5 * WAIT)
    text = report.render()
    assert report.outcome is Outcome.INCONCLUSIVE, text
    assert "not listening after" in text and "--start-timeout" in text
    assert f"server stdout (last {OUTPUT_LINES} lines):" in text
    assert "boot step 59" in text and f"boot step {60 - OUTPUT_LINES}" in text
    assert f"boot step {59 - OUTPUT_LINES}\n" not in text + "\n"
    assert "server stderr (last 1 lines):" in text and "still loading the model" in text


def test_a_server_that_exits_shows_its_output(tmp_path: Path) -> None:
    report = run_staged("chatty_env", tree(tmp_path, "exit"), start_timeout=30 * WAIT)
    text = report.render()
    assert report.outcome is Outcome.FAIL and "exited with status 3" in text, text
    assert "boot step 59" in text and "still loading the model" in text


def test_start_timeout_is_listed_by_nox_and_the_command_help() -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "nox", "-l"], capture_output=True, text=True, timeout=60,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if x.startswith("- staged_run "))
    assert "--start-timeout" in line, line
