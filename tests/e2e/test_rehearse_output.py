"""What ``rehearse`` prints stays true after it exits: without ``--keep`` no path into its
removed workspace and no command for its stopped Hub; with it, the way to start that Hub again,
after which the board's next command runs as printed."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from huggingface_hub import HfApi

from releaselib.rehearse import BRIEFING_MARKER, GONE
from tests.test_rehearse_repo import make_checkout

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # two whole rehearsals for what they print: .ci/run runs them
PROJECT = Path(__file__).resolve().parents[2]
MAIN = "from openenv_release.cli import main; main()"
WAIT_FACTOR = float(os.environ.get("OPENENV_RELEASE_TEST_WAIT_FACTOR", "1"))


def cli(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The console script as a user runs it (``openenv-release`` in a printed line is this)."""
    base = {"PATH": os.environ["PATH"], "HOME": str(cwd), "PYTHONPATH": str(PROJECT), "TMPDIR": str(cwd / "tmp")}
    return subprocess.run([sys.executable, "-c", MAIN, *argv], cwd=cwd, env={**base, **(env or {})}, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("out")
    (root / "tmp").mkdir()
    return make_checkout(root / "OpenEnv", root / "secret.txt")


def test_without_keep_nothing_printed_points_into_the_removed_workspace(checkout: Path) -> None:
    cwd = checkout.parent
    done = cli("rehearse", "--repo", str(checkout), "--env", "echo_env", "--builder", "host", cwd=cwd)
    assert done.returncode == 0, done.stderr[-2000:]
    printed = done.stdout + done.stderr
    assert "openenv-rehearsal-" not in printed and not list((cwd / "tmp").iterdir())  # removed, unnamed
    assert f"echo_env (PAUSED): next, {GONE}" in done.stdout and "--keep DIR" in done.stdout
    assert "briefing: " not in done.stdout and "openenv-release cleanup" not in done.stdout
    saved = cwd / "rehearsal-briefing.md"  # copied out of the workspace: it exists
    assert f"briefing copied to {saved}" in done.stdout
    text = saved.read_text()
    assert text.startswith(BRIEFING_MARKER) and "rehearse again with `--keep DIR`" in text
    # the pin is the served checkout's HEAD, named by its sha: no path to a stand-in remote
    assert "openenv-rehearsal-" not in text and "no-remote" not in text
    [pin] = [line for line in text.splitlines() if line.startswith("| OpenEnv ref |")]
    head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert "`HEAD at " in pin  # the checkout has an edited tracked file: the copy commits it on HEAD
    assert f"OpenEnv's HEAD {head[:12]} plus your uncommitted changes" in pin, pin


def test_with_keep_the_printed_restart_then_the_next_command_run_as_printed(checkout: Path) -> None:
    cwd, kept = checkout.parent, checkout.parent / "kept"
    done = cli("rehearse", "--repo", str(checkout), "--env", "echo_env", "--builder", "host", "--keep", str(kept), "--briefing", str(cwd / "b.md"), cwd=cwd)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    start = lines.index("the embedded Hub stopped with the rehearsal; to run the next commands above, start it again first:")
    serve, wait = (line.strip() for line in lines[start + 1 : start + 3])
    (next_line,) = [line.split(": next, ", 1)[1] for line in lines if line.startswith("echo_env (PAUSED): next, ")]
    assert serve.startswith("openenv-release localhub.serve --builder host") and serve.endswith(f"> {kept / 'hub.env'} &")
    assert "until [ -s" in wait and next_line.startswith("openenv-release cleanup ")
    serving = subprocess.Popen(  # the printed line, but for `openenv-release` and its redirect
        [sys.executable, "-c", MAIN, *shlex.split(serve.rsplit(" > ", 1)[0])[1:]], cwd=cwd,
        env={"PATH": os.environ["PATH"], "HOME": str(cwd), "PYTHONPATH": str(PROJECT)}, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert serving.stdout is not None
        exported = dict(shlex.split(serving.stdout.readline())[1].split("=", 1) for _ in range(9))
        ran = cli(*shlex.split(next_line)[1:], cwd=cwd, env=exported)
        assert ran.returncode == 0, (next_line, ran.stderr)
        api = HfApi(endpoint=exported["HF_ENDPOINT"], token=exported["HF_TOKEN"])
        deadline = time.monotonic() + 30 * WAIT_FACTOR
        while api.get_space_runtime("openenv/echo_env-0.2.2").stage != "PAUSED" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert api.get_space_runtime("openenv/echo_env-0.2.2").stage == "PAUSED"
    finally:
        os.kill(serving.pid, signal.SIGTERM)
        serving.wait(60)
