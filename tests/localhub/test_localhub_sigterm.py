"""``python -m releaselib.localhub`` stops on SIGTERM while a Space is still building."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
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
        assert server.wait(timeout=60 * WAIT_FACTOR) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
