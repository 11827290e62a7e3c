"""Deploy against the embedded Hub: private docker Spaces, only what changed, faults, secrets."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from huggingface_hub import HfApi

from releaselib.config import ReleaseConfig
from releaselib.errors import AuthError, UsageError
from releaselib.hub.client import Hub
from releaselib.hub.deploy import canonical_fence, check_repo_id, deploy_all, plan_all
from releaselib.hub.retry import RetryPolicy
from releaselib.localhub.hub import LocalHub
from releaselib.localhub.scenario import Fault, Scenario
from releaselib.stage.discover import discover_envs, select_envs
from releaselib.stage.stage_env import stage_envs
from tests.helpers import UPLOADS_ONLY, builtin_registry, cli, offline, release_config, user_cli

EXAMPLE_ENV = Path(__file__).resolve().parents[1] / "examples" / "envs" / "echo_env"
FAST = RetryPolicy(attempts=8, base=0.01, cap=0.05)


@pytest.fixture
def localhub(tmp_path: Path) -> Iterator[LocalHub]:
    """These tests are about uploads: the embedded Hub never starts their Spaces."""
    with LocalHub(tmp_path / "localhub", scenario=UPLOADS_ONLY) as hub:
        yield hub


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """Three small envs (copies of the example echo env) in an OpenEnv-shaped checkout."""
    repo = tmp_path / "OpenEnv"
    (repo / "envs").mkdir(parents=True)
    (repo / "pyproject.toml").write_text('[project]\nname = "openenv"\nversion = "0.2.2"\n')
    for name in ("alpha_env", "beta_env", "gamma_env"):
        shutil.copytree(EXAMPLE_ENV, repo / "envs" / name)
    return repo


def config_for(repo: Path, tmp_path: Path, **changes: object) -> ReleaseConfig:
    return release_config(repo, tmp_path / "staging", ref="main", dist="openenv", jobs=3).with_(**changes)


def release(hub_endpoint: str, token: str | None, config: ReleaseConfig, *, dry_run: bool = False):
    registry = builtin_registry()
    staged = stage_envs(config, select_envs(discover_envs(config.repo), []), registry)
    hub = Hub.connect(hub_endpoint, token=token, policy=FAST)
    fence = canonical_fence(config, registry)
    if dry_run:
        return {d.staged.env: d for d in plan_all(hub, config, staged, fence=fence)}
    return {d.staged.env: d for d in deploy_all(hub, config, staged, fence=fence)}


def remote_tree(api: HfApi, space_id: str) -> dict[str, str]:
    return {f.path: f.blob_id for f in api.list_repo_tree(space_id, repo_type="space", recursive=True) if hasattr(f, "blob_id")}


def test_first_deploy_creates_private_docker_spaces_with_the_staged_files(localhub, checkout, tmp_path) -> None:
    config = config_for(checkout, tmp_path)
    results = release(localhub.endpoint, localhub.token, config)
    api = HfApi(endpoint=localhub.endpoint, token=localhub.token)
    assert localhub.counters().commits == 3
    for d in results.values():
        assert d.ok and d.created and d.commit and not d.unchanged, d.error
        info = api.space_info(d.space_id)
        assert info.private is True and info.sdk == "docker"
        tree = remote_tree(api, d.space_id)
        assert tree == {p: sha for p, (sha, _) in d.staged.manifest.items()}
        assert d.files_sent == d.staged.files and d.bytes_sent == d.staged.bytes
    assert HfApi(endpoint=localhub.endpoint, token=False).repo_exists("openenv/alpha_env-0.2.2", repo_type="space") is False


def test_unchanged_redeploy_makes_no_commit_and_sends_nothing(localhub, checkout, tmp_path) -> None:
    config = config_for(checkout, tmp_path)
    release(localhub.endpoint, localhub.token, config)
    localhub.reset_counters()
    results = release(localhub.endpoint, localhub.token, config)
    assert all(d.unchanged and d.commit is None and d.head and d.files_sent == 0 for d in results.values())
    counters = localhub.counters()
    assert (counters.commits, counters.uploaded_bytes) == (0, 0)
    assert "preupload" not in counters.by_endpoint


def test_one_changed_file_makes_one_commit_with_that_file_alone(localhub, checkout, tmp_path) -> None:
    config = config_for(checkout, tmp_path)
    release(localhub.endpoint, localhub.token, config)
    (checkout / "envs" / "beta_env" / "server" / "echo_environment.py").write_text("# changed\n")
    localhub.reset_counters()
    results = release(localhub.endpoint, localhub.token, config)
    assert localhub.counters().commits == 1
    beta = results["beta_env"]
    assert beta.commit and beta.files_sent == 2  # the env's file at the root and under envs/beta_env/
    assert results["alpha_env"].unchanged and results["gamma_env"].unchanged
    api = HfApi(endpoint=localhub.endpoint, token=localhub.token)
    assert api.list_repo_commits(beta.space_id, repo_type="space")[0].title.startswith("Release beta_env 0.2.2")


def test_a_stale_remote_file_is_deleted_but_gitattributes_kept(localhub, checkout, tmp_path) -> None:
    config = config_for(checkout, tmp_path)
    release(localhub.endpoint, localhub.token, config)
    api = HfApi(endpoint=localhub.endpoint, token=localhub.token)
    space = "openenv/alpha_env-0.2.2"
    for name in ("uv.lock", ".gitattributes"):
        api.upload_file(path_or_fileobj=b"old\n", path_in_repo=name, repo_id=space, repo_type="space")
    results = release(localhub.endpoint, localhub.token, config)
    assert results["alpha_env"].commit
    tree = remote_tree(api, space)
    assert "uv.lock" not in tree and ".gitattributes" in tree


def test_an_existing_space_deploy_did_not_create_keeps_its_visibility(localhub, checkout, tmp_path) -> None:
    """Deploy sets visibility only on a Space it creates: its own private candidate, deployed
    again by a public release, stays private; the dry run says the same. (One made public by
    hand is not written at all: tests/test_deploy_ownership.py.)"""
    api = HfApi(endpoint=localhub.endpoint, token=localhub.token)
    release(localhub.endpoint, localhub.token, config_for(checkout, tmp_path))
    (checkout / "envs" / "alpha_env" / "server" / "extra.py").write_text("X = 1\n")
    config = config_for(checkout, tmp_path, private=False)
    settings_before = sum(r.method == "PUT" and "settings" in r.path for r in localhub.requests())
    plan = release(localhub.endpoint, localhub.token, config, dry_run=True)["alpha_env"].plan
    assert plan is not None and plan.visibility == "private (kept)" and "stays private" in (plan.note or "")
    results = release(localhub.endpoint, localhub.token, config)
    alpha = results["alpha_env"]
    assert alpha.ok and alpha.commit and not alpha.created and "stays private" in (alpha.note or "")
    assert api.space_info("openenv/alpha_env-0.2.2").private is True
    assert sum(r.method == "PUT" and "settings" in r.path for r in localhub.requests()) == settings_before


@pytest.mark.parametrize("private", [False, True], ids=["public", "private"])
def test_a_candidate_id_holding_a_space_no_release_made_is_refused(localhub, checkout, tmp_path, private) -> None:
    """Issue 26: deploy used to delete the files of someone else's public Space at a candidate
    id and leave the unverified candidate public."""
    api = HfApi(endpoint=localhub.endpoint, token=localhub.token)
    theirs = "openenv/alpha_env-0.2.2"
    api.create_repo(theirs, repo_type="space", space_sdk="docker", private=private)
    api.upload_file(path_or_fileobj=b"# theirs\n", path_in_repo="README.md", repo_id=theirs, repo_type="space", commit_message="their work")
    before = remote_tree(api, theirs)
    config = config_for(checkout, tmp_path)
    plan = release(localhub.endpoint, localhub.token, config, dry_run=True)["alpha_env"].plan
    assert plan is not None and plan.upload == () and plan.delete == ()
    assert "refused: openenv/alpha_env-0.2.2 exists and" in (plan.note or "")
    results = release(localhub.endpoint, localhub.token, config)
    assert not results["alpha_env"].ok and "alpha_env: openenv/alpha_env-0.2.2 exists and" in (results["alpha_env"].error or "")
    assert "pick another --suffix" in (results["alpha_env"].error or "")
    assert remote_tree(api, theirs) == before and api.space_info(theirs).private is private
    assert results["beta_env"].ok and results["beta_env"].created  # the other env is not stopped


def test_public_release_makes_public_spaces(localhub, checkout, tmp_path) -> None:
    release(localhub.endpoint, localhub.token, config_for(checkout, tmp_path, private=False))
    assert HfApi(endpoint=localhub.endpoint, token=False).space_info("openenv/gamma_env-0.2.2").private is False


def test_dry_run_plans_without_writing(localhub, checkout, tmp_path) -> None:
    config = config_for(checkout, tmp_path)
    release(localhub.endpoint, localhub.token, config)
    (checkout / "envs" / "alpha_env" / "README.md").write_text("# new\n")
    localhub.reset_counters()
    plans = release(localhub.endpoint, localhub.token, config, dry_run=True)
    alpha = plans["alpha_env"].plan
    assert alpha is not None and alpha.exists and alpha.change == ("README.md", "envs/alpha_env/README.md")
    assert plans["beta_env"].plan is not None and plans["beta_env"].plan.upload == ()
    assert localhub.counters().commits == 0
    assert {r.method for r in localhub.requests()} <= {"GET"}


def test_dry_run_without_a_token_says_what_it_could_not_see(localhub, checkout, tmp_path) -> None:
    plans = release(localhub.endpoint, None, config_for(checkout, tmp_path), dry_run=True)
    plan = plans["alpha_env"].plan
    assert plan is not None and plan.exists is None and "no token" in (plan.note or "")


def test_a_missing_or_rejected_token_stops_before_any_upload(localhub, checkout, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf-home"))
    with pytest.raises(AuthError, match="no Hugging Face token"):
        release(localhub.endpoint, None, config_for(checkout, tmp_path))
    with pytest.raises(AuthError, match="rejected the token"):
        release(localhub.endpoint, "hf_notavalidtoken", config_for(checkout, tmp_path))
    assert localhub.counters().commits == 0


def test_402_is_a_clear_per_env_failure(localhub_factory, checkout, tmp_path) -> None:
    hub = localhub_factory(Scenario(faults=(Fault(endpoint="create_repo", status=402, count=1),), spaces=UPLOADS_ONLY.spaces))
    results = release(hub.endpoint, hub.token, config_for(checkout, tmp_path, jobs=1))
    failed = [d for d in results.values() if not d.ok]
    assert len(failed) == 1 and "402 Payment Required" in (failed[0].error or "")
    assert sum(d.ok for d in results.values()) == 2


def test_faults_on_a_fifth_of_requests_end_in_the_same_state_without_duplicate_commits(localhub_factory, checkout, tmp_path) -> None:
    faults = (
        Fault(status=429, retry_after=0, fraction=0.1),
        Fault(status=503, fraction=0.1),
        Fault(endpoint="commit", drop=True, count=1),
    )
    hub = localhub_factory(Scenario(faults=faults, spaces=UPLOADS_ONLY.spaces))
    results = release(hub.endpoint, hub.token, config_for(checkout, tmp_path))
    assert all(d.ok for d in results.values()), [d.error for d in results.values()]
    assert hub.counters().commits == 3
    assert hub.counters().by_status.get("429", 0) + hub.counters().by_status.get("503", 0) > 0
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    for d in results.values():
        assert remote_tree(api, d.space_id) == {p: sha for p, (sha, _) in d.staged.manifest.items()}
        assert len(api.list_repo_commits(d.space_id, repo_type="space")) == 1


def test_the_deploy_task_records_into_the_release_ledger_when_it_exists(localhub, checkout, tmp_path) -> None:
    import json
    import os

    from releaselib.config import release_key
    from releaselib.ledger.ledger import Ledger
    from releaselib.ledger.paths import default_path

    config = config_for(checkout, tmp_path)
    Ledger.load(default_path(config), release_key(config))
    env = {**os.environ, **localhub.client_env(), **offline(tmp_path)}
    args = ["deploy", "--repo", str(checkout), "--staging-dir", str(tmp_path / "staging"), "--version", "0.2.2", "--env", "alpha_env"]
    result = cli(*args, env=env)
    assert result.returncode == 0, result.stderr
    recorded = json.loads(default_path(config).read_text())["envs"]
    assert set(recorded) == {"alpha_env"}
    assert recorded["alpha_env"]["stage"]["status"] == "done"
    deploy = recorded["alpha_env"]["deploy"]
    assert deploy["status"] == "done" and deploy["created"] and deploy["head"] == deploy["commit"]
    assert localhub.token not in default_path(config).read_text()


def test_the_deploy_task_says_it_uploads_an_uncommitted_edit(localhub, checkout, tmp_path) -> None:
    import os
    import subprocess

    git = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run([*git, *args], cwd=checkout, check=True, capture_output=True)
    server = checkout / "envs" / "alpha_env" / "server" / "echo_environment.py"
    server.write_text(server.read_text() + "\n# an edit not committed\n")
    env = {**os.environ, **localhub.client_env(), **offline(tmp_path)}
    args = ["deploy", "--repo", str(checkout), "--staging-dir", str(tmp_path / "staging"), "--version", "0.2.2"]
    result = cli(*args, "--env", "alpha_env", "--env", "beta_env", env=env)
    assert result.returncode == 0, result.stderr
    said = " ".join(result.stdout.split())
    assert "envs/alpha_env: 1 file modified (server/echo_environment.py) — staged with their uncommitted changes" in said
    assert "envs/beta_env:" not in said  # clean: nothing to say


def publish_canonical(api: HfApi, space_id: str) -> str:
    """A public canonical Space holding an older release; returns its head sha."""
    api.create_repo(space_id, repo_type="space", space_sdk="docker", private=False)
    api.upload_file(path_or_fileobj=b"# 0.2.1\n", path_in_repo="README.md", repo_id=space_id, repo_type="space")
    return api.space_info(space_id).sha


@pytest.mark.parametrize(
    ("config_file", "args", "env", "fragment"),
    [
        pytest.param(False, ["--suffix", ""], {}, "--suffix ''", id="empty-suffix-flag"),
        pytest.param(False, [], {"OPENENV_RELEASE_SUFFIX": ""}, "OPENENV_RELEASE_SUFFIX=''", id="empty-suffix-variable"),
        pytest.param(True, [], {}, "invoke config release.suffix ''", id="empty-suffix-config-file"),
        pytest.param(False, ["--env", "echo_env", "--repo-id", "openenv/echo_env"], {}, "only promote writes canonical Spaces", id="repo-id-canonical"),
        pytest.param(False, ["--env", "echo_env", "--repo-id", "openenv/sudoku"], {}, "only promote writes canonical Spaces", id="repo-id-plugin-alias"),
    ],
)
def test_deploy_never_writes_a_canonical_space(localhub, checkout, tmp_path, config_file, args, env, fragment) -> None:
    """Issue 12: ``deploy --suffix ""`` once pushed an unverified tree into the public canonical
    openenv/echo_env, flipped it private and exited 0."""
    from tests.test_bad_input import assert_one_line

    shutil.copytree(EXAMPLE_ENV, checkout / "envs" / "echo_env")
    (tmp_path / "invoke.yaml").write_text('release:\n  suffix: ""\n')
    api = HfApi(endpoint=localhub.endpoint, token=localhub.token)
    heads = {s: publish_canonical(api, s) for s in ("openenv/echo_env", "openenv/sudoku")}
    localhub.reset_counters()
    core = ["-f", str(tmp_path / "invoke.yaml")] if config_file else []
    task = ["deploy", "--repo", str(checkout), "--staging-dir", str(tmp_path / "staging"), "--version", "0.2.2"]
    result = user_cli(*core, *task, *args, **localhub.client_env(), **env)
    assert_one_line(result, 2, fragment, "promote")
    for space_id, sha in heads.items():
        info = api.space_info(space_id)
        assert (info.sha, info.private) == (sha, False), space_id
    assert localhub.counters().commits == 0
    assert {r.method for r in localhub.requests()} <= {"GET"}


def test_deploy_refuses_a_repo_id_naming_a_canonical_in_another_case_or_namespace(localhub, checkout, tmp_path) -> None:
    """``--namespace foo --repo-id openenv/echo_env`` once overwrote the canonical: the fence
    compares names without case, in every namespace."""
    config = config_for(checkout, tmp_path).with_(namespace="foo")
    fence = canonical_fence(config, builtin_registry())
    for repo_id in ("openenv/echo_env", "OpenEnv/Echo_Env", "foo/ECHO_ENV"):
        with pytest.raises(UsageError, match=r"is a canonical Space.*only promote"):
            check_repo_id(repo_id, ["echo_env"], fence)
    assert localhub.counters().commits == 0
