"""``python -m releaselib.localhub`` (what ``invoke localhub.serve`` runs): one JSON line, clean exit."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from huggingface_hub import HfApi
from localhub_helpers import QUICK_APP, processes_mentioning, wait_for_stage, write_tree

from tests.helpers import waits


def test_serve_prints_endpoint_and_token_then_stops_on_ctrl_c(tmp_path: Path) -> None:
    state = tmp_path / "state"
    server = subprocess.Popen(
        [sys.executable, "-m", "releaselib.localhub", "--port", "0", "--state-dir", str(state)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        first = json.loads(server.stdout.readline())
        assert set(first) == {"endpoint", "token", "ca_bundle"}
        api = HfApi(endpoint=first["endpoint"], token=first["token"])
        api.create_repo("acme/quick", repo_type="space", space_sdk="docker")
        tree = write_tree(tmp_path / "tree", QUICK_APP)
        api.upload_folder(folder_path=tree, repo_id="acme/quick", repo_type="space")
        assert wait_for_stage(api, "acme/quick", {"RUNNING", "RUNTIME_ERROR"}).stage == "RUNNING"
        assert processes_mentioning(str(state))
    finally:
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=waits(30)) == 0
    assert processes_mentioning(str(state)) == []
    assert server.stdout.read() == ""


def test_serve_with_a_missing_scenario_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "releaselib.localhub", "--scenario", str(tmp_path / "missing.yaml")],
        capture_output=True, text=True, timeout=waits(60),
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [f"error: scenario {tmp_path / 'missing.yaml'}: No such file or directory; pass --scenario a readable YAML/JSON scenario file"]
