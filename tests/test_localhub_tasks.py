"""The embedded Hub as a person uses it: ``localhub.serve`` says how to reach it (its own token and
CA bundle), and ``localhub.seed --canonicals`` gives it the canonical Spaces a namespace has."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from huggingface_hub import HfApi

from releaselib.localhub import LocalHub
from releaselib.localhub.serve import announcement
from tests.helpers import cli

ROOT = Path(__file__).resolve().parents[1]
USER_TOKEN = "hf_" + "u" * 34  # what a developer's shell might hold


def test_the_json_line_names_the_ca_bundle(localhub: LocalHub) -> None:
    said = json.loads(announcement(localhub, print_env=False))
    assert said == {
        "endpoint": localhub.endpoint,
        "token": localhub.token,
        "ca_bundle": str(localhub.ca_bundle),
    }
    assert "BEGIN CERTIFICATE" in Path(said["ca_bundle"]).read_text()


def test_print_env_gives_eval_ready_lines_with_the_hubs_own_token_then_seed_works(
    tmp_path: Path,
) -> None:
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    serving = subprocess.Popen(
        [sys.executable, "-m", "releaselib.localhub", "--state-dir", str(tmp_path / "hub"),
         "--print-env"],
        env={**base, "HF_TOKEN": USER_TOKEN}, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert serving.stdout is not None
        lines = [serving.stdout.readline() for _ in range(9)]
        exported = dict(shlex.split(line)[1].split("=", 1) for line in lines)
        assert all(line.startswith("export ") for line in lines)
        stored = json.loads((tmp_path / "hub" / "hub.json").read_text())["token"]
        assert exported["HF_TOKEN"] == stored != USER_TOKEN
        assert "BEGIN CERTIFICATE" in Path(exported["SSL_CERT_FILE"]).read_text()
        env = {**base, **exported}
        first = cli("localhub.seed", "--canonicals", env=env)
        assert first.returncode == 0, first.stderr
        assert "created openenv/echo_env (public)" in first.stdout
        assert "created openenv/wordle (public)" in first.stdout
        api = HfApi(endpoint=exported["HF_ENDPOINT"], token=exported["HF_TOKEN"])
        assert api.space_info("openenv/wordle").private is False
        assert api.get_space_variables("openenv/wordle")["TEXTARENA_ENV_ID"].value == "Wordle-v0"
        again = cli("localhub.seed", "--canonicals", "--env", "legacy_env", env=env)
        assert again.stdout.strip() == "created openenv/legacy_env (public)", again.stderr
        assert exported["HF_TOKEN"] not in first.stdout + first.stderr
    finally:
        os.kill(serving.pid, signal.SIGTERM)
        serving.wait(60)


def test_seed_refuses_a_hub_that_is_not_on_this_machine(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = cli("localhub.seed", "--canonicals", "--hub-endpoint", "https://huggingface.co", env=env)
    assert done.returncode == 2 and "only talks to an embedded Hub" in done.stderr
    nothing = cli("localhub.seed", env=env)
    assert nothing.returncode == 2 and "--canonicals" in nothing.stderr
