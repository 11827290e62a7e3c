"""The real ``hf`` console script (installed by huggingface_hub) against the embedded Hub,
as the release skill uses it: every command with ``--format json``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from releaselib.localhub import LocalHub
from releaselib.options import Options, build_config
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.records import StagedSpace
from releaselib.stage.discover import discover_envs, select_envs
from releaselib.stage.stage_env import stage_envs
from tests.helpers import TEST_SHA, waits

PROJECT = Path(__file__).resolve().parents[2]
HF = shutil.which("hf", path=str(Path(sys.executable).parent)) or shutil.which("hf")
SPACE = "openenv/echo_env-hf"

pytestmark = pytest.mark.skipif(HF is None, reason="huggingface_hub's hf console script is not installed")


@pytest.fixture(scope="module")
def hf(hub: LocalHub, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``hf(*args)``: run the console script against ``hub``; its JSON output, parsed."""
    home = tmp_path_factory.mktemp("home")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), **hub.client_env()}

    def run(*args: str, ok: bool = True) -> Any:
        result = subprocess.run([str(HF), *args, "--format", "json"], capture_output=True, text=True, env=env, timeout=waits(120))
        assert (result.returncode == 0) == ok, f"hf {' '.join(args)}: {result.stderr}"
        return json.loads(result.stdout) if ok and result.stdout.strip() else result.stderr

    return run


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> StagedSpace:
    """echo_env from the bundled examples, staged as the tool stages it."""
    work = tmp_path_factory.mktemp("staged")
    config, _ = build_config(
        Options(repo=str(PROJECT / "examples"), staging_dir=str(work / "s"), remote=str(work / "no-remote"), ref=TEST_SHA, dist="openenv")
    )
    [space] = stage_envs(config, select_envs(discover_envs(config.repo), ["echo_env"]), PluginRegistry(get_plugin_manager()))
    assert space.ok, space.error
    return space


@pytest.fixture(scope="module")
def space(hf: Any, staged: StagedSpace) -> Iterator[str]:
    """A private docker Space made with ``hf repos create`` and filled with ``hf upload``."""
    hf("repos", "create", SPACE, "--type", "space", "--space-sdk", "docker", "--private")
    hf("upload", SPACE, str(staged.staged_dir), ".", "--type", "space", "--commit-message", "staged echo_env")
    yield SPACE


def test_auth_whoami_names_the_hub_user_and_endpoint(hf: Any, hub: LocalHub) -> None:
    assert hf("auth", "whoami") == {"user": "openenv", "orgs": None, "endpoint": hub.endpoint}


def test_repos_create_makes_a_private_docker_space(hf: Any, space: str) -> None:
    assert hf("spaces", "info", space, "--expand", "private,sdk") == {"id": space, "private": True, "sdk": "docker"}
    assert "already created" in hf("repos", "create", space, "--type", "space", "--space-sdk", "docker", ok=False)


def test_upload_of_a_staged_tree_holds_every_staged_file(hf: Any, space: str, staged: StagedSpace) -> None:
    files = {f["path"]: f for f in hf("spaces", "ls", space, "--recursive") if "blob_id" in f}
    assert set(staged.manifest) <= set(files)
    assert all(files[path]["blob_id"] == blob for path, (blob, _) in staged.manifest.items())


def test_spaces_ls_expand_runtime_reaches_running_with_domains(hf: Any, space: str) -> None:
    deadline = time.monotonic() + waits(120)
    while True:
        [listed] = [s for s in hf("spaces", "ls", "--author", "openenv", "--expand", "runtime") if s["id"] == space]
        if listed["runtime"]["stage"] == "RUNNING" or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert set(listed) == {"id", "runtime"}
    assert listed["runtime"]["stage"] == "RUNNING", listed
    assert [d["stage"] for d in listed["runtime"]["raw"]["domains"]] == ["READY"]


def test_spaces_logs_shows_the_run_logs_and_the_build_logs(hf: Any, space: str, hub: LocalHub) -> None:
    test_spaces_ls_expand_runtime_reaches_running_with_domains(hf, space)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **hub.client_env()}

    def logs(*flags: str) -> str:
        result = subprocess.run([str(HF), "spaces", "logs", space, *flags], capture_output=True, text=True, env=env, timeout=waits(120))
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert "Application startup complete." in logs()  # uvicorn's stderr, as the app wrote it
    assert "Application startup complete." in logs("-n", "50")
    assert "host builder" in logs("--build") and "Application startup" not in logs("--build")


def test_spaces_info_shows_the_uploaded_commit_and_card(hf: Any, space: str) -> None:
    info = hf("spaces", "info", space)
    assert info["sdk"] == "docker" and info["private"] is True
    assert info["card_data"]["sdk"] == "docker" and "openenv" in info["tags"]
    assert info["sha"] == info["runtime"]["raw"]["sha"]


def test_repos_settings_changes_visibility(hf: Any, space: str) -> None:
    hf("repos", "settings", space, "--type", "space", "--public")
    assert hf("spaces", "info", space, "--expand", "private")["private"] is False
    hf("repos", "settings", space, "--type", "space", "--private")
    assert hf("spaces", "info", space, "--expand", "private")["private"] is True


def test_collections_create_add_item_info_and_list(hf: Any, space: str) -> None:
    slug = hf("collections", "create", "OpenEnv Environment Hub hf", "--private")["slug"]
    hf("collections", "add-item", slug, space, "space", "--note", "verified")
    info = hf("collections", "info", slug)
    assert info["private"] is True and info["owner"] == {"name": "openenv", "type": "user"}
    assert [(i["item_id"], i["item_type"], i["note"]) for i in info["items"]] == [(space, "space", "verified")]
    assert slug in [c["slug"] for c in hf("collections", "ls", "--owner", "openenv")]
