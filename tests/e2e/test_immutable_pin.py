"""A release pins one OpenEnv commit from staging to promotion, however far ``main`` moves: the
sha is resolved once and read back from the ledger by every later step (embedded Hub, host
builder; a local bare repository stands in for the OpenEnv remote)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from huggingface_hub import HfApi

from releaselib.localhub import LocalHub
from releaselib.rehearse import copy_checkout, examples_dir
from tests.helpers import waits
from tests.test_step_by_step import run_task

pytestmark = pytest.mark.e2e
PIN = "git+https://github.com/huggingface/OpenEnv.git@"


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def echo_checkout(tmp: Path) -> Path:
    """The examples with echo_env alone, committed on ``main``."""
    source = tmp / "source"
    shutil.copytree(examples_dir(), source)
    for env in (source / "envs").iterdir():
        if env.name != "echo_env":
            shutil.rmtree(env)
    return copy_checkout(source, tmp / "OpenEnv")


def move_main(remote: Path, tmp: Path) -> str:
    """A new commit on the remote's ``main`` (another clone pushes it); its sha."""
    other = tmp / "elsewhere"
    git("clone", "-q", str(remote), str(other), cwd=tmp)
    (other / "CHANGELOG.md").write_text("moved on\n")
    git("add", ".", cwd=other)
    git("commit", "-qm", "main moves on", cwd=other)
    git("push", "-q", "origin", "main", cwd=other)
    return git("rev-parse", "HEAD", cwd=other)


def pinned_shas(text: str) -> set[str]:
    return {line.split(PIN, 1)[1][:40] for line in text.splitlines() if PIN in line}


def test_every_step_pins_the_sha_the_release_staged_with(
    localhub_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    for name in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(name, "t")
    for name in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(name, "t@example.com")
    checkout = echo_checkout(tmp_path)
    remote = tmp_path / "OpenEnv.git"
    git("clone", "-q", "--bare", str(checkout), str(remote), cwd=tmp_path)
    staged_sha = git("rev-parse", "HEAD", cwd=checkout)
    hub = localhub_factory()
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    api.create_repo("openenv/echo_env", repo_type="space", space_sdk="docker")
    for key, value in {**hub.client_env(), "OPENENV_RELEASE_REMOTE": str(remote)}.items():
        monkeypatch.setenv(key, value)
    for name in ("OPENENV_RELEASE_REF", "OPENENV_RELEASE_DIST"):
        monkeypatch.delenv(name, raising=False)
    staging = tmp_path / "staging"
    common = ("--repo", str(checkout), "--staging-dir", str(staging), "--hub-endpoint", hub.endpoint)

    code, out = run_task(capsys, "deploy", *common)
    assert code == 0, out
    assert f"main at {staged_sha[:12]}" in out
    moved = move_main(remote, tmp_path)
    assert moved != staged_sha
    for step in ("verify", "promote"):
        code, out = run_task(capsys, step, *common)
        assert code == 0, out
    assert f"main at {staged_sha[:12]}" in out and "not resolved again" in out  # promote's tuple
    code, out = run_task(capsys, "stage", *common[:4], "--env", "echo_env")  # staging again
    assert code == 0 and f"main at {staged_sha[:12]}" in out, out

    [ledger] = staging.glob("ledger-*.json")
    release = json.loads(ledger.read_text())["release"]
    assert (release["ref"], release["sha"], release["dist"]) == ("main", staged_sha, "openenv")
    staged = staging / "openenv" / "echo_env-0.2.2" / "envs" / "echo_env" / "pyproject.toml"
    assert pinned_shas(staged.read_text()) == {staged_sha}
    for space in ("openenv/echo_env-0.2.2", "openenv/echo_env"):  # the candidate, the canonical
        files = api.list_repo_files(space, repo_type="space")
        texts = [
            Path(api.hf_hub_download(space, name, repo_type="space", cache_dir=tmp_path / "dl"))
            .read_text()
            for name in files
            if name.endswith(("pyproject.toml", ".txt", "Dockerfile"))
        ]
        assert set().union(*map(pinned_shas, texts)) == {staged_sha}, space
        card = Path(api.hf_hub_download(space, "README.md", repo_type="space", cache_dir=tmp_path / "dl"))
        assert f"main at {staged_sha[:12]}" in card.read_text(), space


def test_another_ref_for_a_release_that_pins_one_already_is_a_usage_error(
    localhub_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    checkout = echo_checkout(tmp_path)
    remote = tmp_path / "OpenEnv.git"
    git("clone", "-q", "--bare", str(checkout), str(remote), cwd=tmp_path)
    monkeypatch.setenv("OPENENV_RELEASE_REMOTE", str(remote))
    for name in ("OPENENV_RELEASE_REF", "OPENENV_RELEASE_DIST"):
        monkeypatch.delenv(name, raising=False)
    common = ("--repo", str(checkout), "--staging-dir", str(tmp_path / "staging"))
    assert run_task(capsys, "stage", *common)[0] == 0
    moved = move_main(remote, tmp_path)
    with pytest.raises(SystemExit) as refused:
        from openenv_release.cli import program

        program.run(["openenv-release", "stage", *common, "--ref", moved])
    assert refused.value.code == 2
    assert "this release already pins OpenEnv main at" in str(refused.value) + capsys.readouterr().err


@pytest.mark.venv
def test_a_factory_reboot_after_main_moved_still_builds_the_pinned_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """The venv builder serves OpenEnv from the checkout at the pinned sha: after the checkout's
    ``main`` moved on (a new version), the canonical's factory rebuild still installs the
    release's commit."""
    for name in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(name, "t")
    for name in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(name, "t@example.com")
    checkout = echo_checkout(tmp_path)
    remote = tmp_path / "OpenEnv.git"
    git("clone", "-q", "--bare", str(checkout), str(remote), cwd=tmp_path)
    git("remote", "add", "origin", str(remote), cwd=checkout)
    pinned = git("rev-parse", "HEAD", cwd=checkout)
    with LocalHub(tmp_path / "hub", builder="venv", openenv=checkout) as hub:
        api = HfApi(endpoint=hub.endpoint, token=hub.token)
        api.create_repo("openenv/echo_env", repo_type="space", space_sdk="docker")
        for key, value in {**hub.client_env(), "OPENENV_RELEASE_REMOTE": str(remote)}.items():
            monkeypatch.setenv(key, value)
        for name in ("OPENENV_RELEASE_REF", "OPENENV_RELEASE_DIST"):
            monkeypatch.delenv(name, raising=False)
        common = ("--repo", str(checkout), "--staging-dir", str(tmp_path / "staging"), "--hub-endpoint", hub.endpoint)
        for step in ("deploy", "verify"):
            code, out = run_task(capsys, step, *common, *(["--wait", str(waits(600))] if step == "verify" else []))
            assert code == 0, out
        moved = move_main(remote, tmp_path)
        git("pull", "-q", "--ff-only", "origin", "main", cwd=checkout)  # the served checkout too
        assert git("rev-parse", "HEAD", cwd=checkout) == moved != pinned
        code, out = run_task(capsys, "promote", *common)
        assert code == 0, out
        before = api.get_space_runtime("openenv/echo_env").raw.get("sha")
        api.restart_space("openenv/echo_env", factory_reboot=True)
        deadline = time.monotonic() + waits(600)
        while (runtime := api.get_space_runtime("openenv/echo_env")).stage != "RUNNING":
            assert runtime.stage not in ("BUILD_ERROR", "RUNTIME_ERROR"), runtime.raw.get("errorMessage")
            assert time.monotonic() < deadline, runtime.stage
            time.sleep(0.5)
        assert runtime.raw.get("sha") == before
        log = "".join(api.fetch_space_logs("openenv/echo_env", build=True))
        served = [line for line in log.splitlines() if line.startswith("OpenEnv served as: ")]
        assert served and all(f"openenv-wheel-{pinned}/" in line for line in served), log[-2000:]
        assert moved not in log
