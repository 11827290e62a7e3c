"""recover against the embedded Hub: stale build errors, stuck starts, known runtime failures."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from huggingface_hub import HfApi

from releaselib.hub.runtime import Recovery, recover
from releaselib.hub.signatures import SIGNATURES
from releaselib.localhub import LocalHub, Scenario, SpaceBehaviour
from releaselib.space_ids import Canonicals
from releaselib.verify.probe import Outcome
from tests.test_verify import (
    EXAMPLES,
    connect,
    deploy_examples,
    release_config,
    staged_space,
    verify,
)

SCENARIO = Scenario(
    spaces=(
        SpaceBehaviour(repo="openenv/stale*", stale_build_error="base image pull failed (old)"),
        SpaceBehaviour(repo="openenv/stuck*", stuck_starting=True),
    )
)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("recover")


@pytest.fixture(scope="module")
def hub(root: Path) -> Iterator[LocalHub]:
    with LocalHub(root / "hub", scenario=SCENARIO) as running:
        yield running


def run_recover(hub: LocalHub, root: Path, staged, **options) -> tuple[Recovery, list[str]]:
    printed: list[str] = []
    settings = {"limit": 30.0, "wait": 60.0, "interval": 0.1} | options
    result = recover(
        connect(hub), release_config(root), staged, signatures=SIGNATURES,
        on_action=printed.append, fence=Canonicals.of([staged.env], ()), **settings,
    )
    return result, printed


def test_a_stale_build_error_is_rebooted_once_and_then_passes(hub: LocalHub, root: Path) -> None:
    [staged] = deploy_examples(hub, root / "a", {"stale_env": "echo_env"})
    recovery, printed = run_recover(hub, root, staged)
    assert len(recovery.actions) == 1 and recovery.actions[0].startswith("factory reboot of openenv/stale_env-0.2.2")
    assert printed == list(recovery.actions)
    assert recovery.before.stage == "BUILD_ERROR" and recovery.recovered
    assert recovery.as_json()["stage_after"] == "RUNNING"
    assert verify(hub, "stale_env")["stale_env"].outcome is Outcome.PASS


def test_a_build_error_on_another_head_is_not_rebooted(hub: LocalHub, root: Path) -> None:
    [staged] = deploy_examples(hub, root / "b", {"stale_other_env": "echo_env"})
    (staged.staged_dir / "README.md").write_text("# changed since the deploy\n")
    recovery, _ = run_recover(hub, root, staged_space(release_config(root), staged.env, staged.staged_dir))
    assert recovery.actions == () and recovery.after.stage == "BUILD_ERROR"
    assert "redeploy" in recovery.note


def test_a_stuck_start_is_rebooted_and_recreated_only_when_allowed(hub: LocalHub, root: Path) -> None:
    [staged] = deploy_examples(hub, root / "c", {"stuck_env": "echo_env"})
    recovery, _ = run_recover(hub, root, staged, limit=0.5)
    assert [a.split(":")[0] for a in recovery.actions] == ["factory reboot of openenv/stuck_env-0.2.2"]
    assert recovery.after.stage == "APP_STARTING" and "--recreate --yes" in recovery.note

    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    first_commit = api.list_repo_commits(staged.space_id, repo_type="space")[-1].commit_id
    recovery, printed = run_recover(hub, root, staged, limit=0.5, wait=0.5, recreate=True)
    assert [a.split(" ")[0] for a in printed] == ["factory", "delete", "redeploy"]
    commits = api.list_repo_commits(staged.space_id, repo_type="space")
    assert len(commits) == 1 and commits[0].commit_id != first_commit  # a new repo, one commit


def test_stdlib_shadowing_fails_and_recover_names_the_signature(hub: LocalHub, root: Path) -> None:
    tree = root / "d" / "shadowed_env"
    shutil.copytree(EXAMPLES / "legacy_env", tree, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(tree / "server" / "Dockerfile", tree / "Dockerfile")  # PYTHONPATH=/app/src/core:...
    shutil.copytree(EXAMPLES.parent / "src" / "openenv" / "core", tree / "src" / "core")
    staged = staged_space(release_config(root), "shadowed_env", tree)
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    api.create_repo(staged.space_id, repo_type="space", space_sdk="docker", private=True)
    api.upload_folder(folder_path=tree, repo_id=staged.space_id, repo_type="space")

    result = verify(hub, "shadowed_env")["shadowed_env"]
    assert result.outcome is Outcome.FAIL and result.state.stage == "RUNTIME_ERROR"
    assert "cannot import name 'GenericAlias'" in (result.as_json()["runtime_error"] or "")
    recovery, _ = run_recover(hub, root, staged)
    assert recovery.actions == () and [s.name for s, _ in recovery.matches] == ["stdlib-shadowing"]
    data = recovery.as_json()
    assert data["signatures"][0]["name"] == "stdlib-shadowing" and "PYTHONPATH" in data["signatures"][0]["fix"]
    assert data["error_tail"].endswith("src/core/types.py)")
    assert recovery.note == "RUNTIME_ERROR: known failure stdlib-shadowing"
