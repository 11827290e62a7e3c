"""The task layer as a user runs it: the console script itself for the JSON shape, its program
in-process (``helpers.task``: same flags, bare environment, output and exit code) for the rest."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import PROJECT, offline, task, user_cli, waits


def test_stage_json_has_the_documented_shape(checkout: Path, tmp_path: Path) -> None:
    result = user_cli("stage", "--repo", str(checkout), "--staging-dir", str(tmp_path / "s"), "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["config"]["namespace"] == "openenv" and doc["config"]["suffix"] == "-0.2.2"
    entry = next(e for e in doc["envs"] if e["env"] == "echo_env")
    assert len(doc["envs"]) == 5
    assert {"env", "space_id", "staged_dir", "ok", "fixes", "checks", "files", "bytes", "error"} <= set(entry)
    assert entry["space_id"] == "openenv/echo_env-0.2.2" and entry["ok"] is True
    assert "ref" in result.stderr  # the release tuple still goes to the terminal, on stderr


def test_stage_alone_records_itself_so_report_works_after_it(checkout: Path, tmp_path: Path) -> None:
    flags = ("--repo", str(checkout), "--staging-dir", str(tmp_path / "s"))
    assert task("report", *flags).returncode == 2  # nothing has run: no ledger yet
    assert task("stage", *flags, "--env", "echo_env").returncode == 0
    report = task("report", *flags, "--json")
    assert report.returncode == 0, report.stderr
    assert [e["env"] for e in json.loads(report.stdout)["envs"]] == ["echo_env"]
    recorded = json.loads((tmp_path / "s" / "ledger-openenv-0.2.2.json").read_text())["envs"]["echo_env"]
    assert recorded["stage"]["status"] == "done" and recorded["stage"]["space_id"] == "openenv/echo_env-0.2.2"


def test_stage_runs_from_inside_a_checkout_without_repo(checkout: Path) -> None:
    result = task("stage", "--env", "echo_env", cwd=checkout)
    assert result.returncode == 0, result.stderr
    assert "openenv/echo_env-0.2.2" in result.stdout
    assert (checkout / "hf-staging" / "openenv" / "echo_env-0.2.2" / "Dockerfile").is_file()


def test_a_failing_env_gives_exit_1_and_the_others_still_stage(checkout: Path, tmp_path: Path) -> None:
    bad = checkout / "envs" / "bad_env"
    shutil.copytree(checkout / "envs" / "echo_env", bad)
    (bad / "server" / "Dockerfile").write_text("FROM python:3.11-slim\nCMD uvicorn server.app:app\n")
    result = task("stage", "--repo", str(checkout), "--staging-dir", str(tmp_path / "s"), "--json")
    assert result.returncode == 1
    envs = {e["env"]: e for e in json.loads(result.stdout)["envs"]}
    assert envs["echo_env"]["ok"] and not envs["bad_env"]["ok"]
    assert "cmd-json-form" in envs["bad_env"]["error"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["stage", "--env", "echo_envv"], "--env 'echo_envv': no such env under envs/; did you mean echo_env?"),
        (["stage", "--version", "1.0; rm -rf /"], "--version '1.0; rm -rf /' is not a version"),
        (["stage", "--namespace", "a b"], "--namespace 'a b' is not a valid Hub namespace"),
        (["stage", "--base-sha", "xyz"], "--base-sha 'xyz' is not a hex sha"),
    ],
)
def test_bad_input_is_one_line_with_exit_2(checkout: Path, tmp_path: Path, args: list[str], message: str) -> None:
    result = task(*args, "--repo", str(checkout), "--staging-dir", str(tmp_path / "s"))
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_directory_that_is_not_a_checkout_is_refused(tmp_path: Path) -> None:
    result = task("stage", cwd=tmp_path)
    assert result.returncode == 2
    assert "not an OpenEnv checkout" in result.stderr and "--repo" in result.stderr
    assert "OPENENV_RELEASE_REPO" in result.stderr


def test_invoke_deploy_runs_from_the_project_folder_once_the_checkout_is_named(checkout: Path, localhub) -> None:
    """The design's example, ``invoke deploy --env X`` from this project's folder: exit 2 naming
    --repo and OPENENV_RELEASE_REPO, then it runs with the variable set."""
    base = {"PATH": "/usr/bin:/bin", "HOME": str(checkout.parent), "PYTHONPATH": str(PROJECT), **localhub.client_env()}
    args = [sys.executable, "-m", "invoke", "deploy", "--env", "echo_env", "--dry-run", "--staging-dir", str(checkout.parent / "s")]

    def invoke(**env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, cwd=PROJECT, capture_output=True, text=True, timeout=waits(120), env={**base, **env})

    refused = invoke()
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "--repo" in refused.stderr and "OPENENV_RELEASE_REPO" in refused.stderr
    done = invoke(OPENENV_RELEASE_REPO=str(checkout), **offline(checkout))
    assert done.returncode == 0, done.stderr
    assert "openenv/echo_env-0.2.2" in done.stdout and "create" in done.stdout
    bad = invoke(OPENENV_RELEASE_REPO=str(checkout / "envs"))
    assert bad.returncode == 2 and "OPENENV_RELEASE_REPO" in bad.stderr and "--repo" not in bad.stderr.split(":")[1]


def test_envs_lists_plugins_and_targets(checkout: Path) -> None:
    result = task("envs", "--repo", str(checkout), "--json")
    assert result.returncode == 0, result.stderr
    listed = {e["env"]: e for e in json.loads(result.stdout)}
    assert sorted(listed) == ["broken_env", "echo_env", "legacy_env", "slow_env", "textarena_env"]
    assert listed["textarena_env"]["canonical_targets"][1] == {"repo": "wordle", "variables": {"TEXTARENA_ENV_ID": "Wordle-v0"}}
    assert listed["echo_env"] == {
        "env": "echo_env", "deployable": True, "why": "server/Dockerfile and README.md",
        "plugin": "env_plugins.echo_env", "canonical_targets": [{"repo": "echo_env", "variables": {}}],
    }


def test_plugins_lists_fixes_and_targets() -> None:
    result = task("plugins", "--json")
    assert result.returncode == 0, result.stderr
    rows = {r["plugin"]: r for r in json.loads(result.stdout)}
    assert rows["env_plugins.textarena_env"]["targets"] == ["sudoku", "wordle"]
    assert "maze_env:legacy-pythonpath" in rows["env_plugins.maze_env"]["fixes"]
    assert "stdlib-shadowing" in rows["releaselib.stage.checks"]["checks"]
