"""``python -m releaselib.localhub`` stops on SIGTERM, exit 143, while a Space is still building."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from huggingface_hub import HfApi
from localhub_helpers import QUICK_APP, write_tree

WAIT_FACTOR = float(os.environ.get("OPENENV_RELEASE_TEST_WAIT_FACTOR", "1"))


def test_sigterm_during_a_build_stops_the_hub_without_waiting_for_the_build(tmp_path: Path) -> None:
    scenario = tmp_path / "slow.yaml"
    scenario.write_text("build_seconds: 3600\n")  # a build that would outlast any test
    server = subprocess.Popen(
        [sys.executable, "-m", "releaselib.localhub", "--state-dir", str(tmp_path / "state"), "--scenario", str(scenario)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        first = json.loads(server.stdout.readline())
        api = HfApi(endpoint=first["endpoint"], token=first["token"])
        api.create_repo("acme/slow", repo_type="space", space_sdk="docker")
        api.upload_folder(folder_path=write_tree(tmp_path / "tree", QUICK_APP), repo_id="acme/slow", repo_type="space")
        assert api.get_space_runtime("acme/slow").stage == "BUILDING"
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60 * WAIT_FACTOR) == 143
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def installers_of(index: str) -> list[int]:
    """Pids whose command line names ``index``: the venv build's uv (or pip) child."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if index.encode() in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


def test_sigterm_while_a_venv_install_hangs_kills_the_installer_and_exits_143(tmp_path: Path) -> None:
    """Issue 26: serve waited for the uv child of a hanging install (up to the build time-out)."""
    with socket.socket() as black_hole:
        black_hole.bind(("127.0.0.1", 0))
        black_hole.listen()  # accepts connections, never answers
        index = f"http://127.0.0.1:{black_hole.getsockname()[1]}/simple"
        tree = tmp_path / "hanging"
        tree.mkdir()
        (tree / "Dockerfile").write_text(
            f"FROM python:3.11\nRUN pip install --index-url {index} inflection\n"
            'CMD ["python", "-m", "http.server", "8000"]\n'
        )
        server = subprocess.Popen(
            [sys.executable, "-m", "releaselib.localhub", "--state-dir", str(tmp_path / "state"), "--builder", "venv"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None
            first = json.loads(server.stdout.readline())
            api = HfApi(endpoint=first["endpoint"], token=first["token"])
            api.create_repo("acme/hanging", repo_type="space", space_sdk="docker")
            api.upload_folder(folder_path=tree, repo_id="acme/hanging", repo_type="space")
            deadline = time.monotonic() + 30 * WAIT_FACTOR
            while not installers_of(index) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert installers_of(index), "the build never started its installer"
            server.send_signal(signal.SIGTERM)
            # stops in about 2 s (5 s under six burners), far inside the 15 min build time-out
            # it used to wait for; 10 s at factor 2 was once too little under the full suite
            assert server.wait(timeout=60 * WAIT_FACTOR) == 143
            deadline = time.monotonic() + 5 * WAIT_FACTOR  # SIGKILLed, then reaped by init
            while installers_of(index) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert installers_of(index) == []
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
            for pid in installers_of(index):  # what a failed run leaves: ours only
                os.kill(pid, signal.SIGKILL)
