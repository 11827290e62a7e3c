"""The pin step's decisions from verdicts, on a checkout; the edits themselves are pin.py's."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from huggingface_hub import CommitOperationAdd

from releaselib.errors import UsageError
from releaselib.publish.pin import commit_pins
from releaselib.publish.pin_step import pin_envs
from releaselib.records import Verdict
from tests.release_world import Release, make_release

ENVS = {"echo_env": ("PASS", ">=0.2.0,<0.2.1"), "broken_env": ("FAIL", None), "slow_env": ("INCONCLUSIVE", ">=0.2.0")}


def test_a_stale_pass_lifts_nothing_and_a_fail_pins_whatever_commit_it_was_for(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, ENVS, canonicals=())
    release.api.create_commit("openenv/echo_env-0.2.2", [CommitOperationAdd("fix.txt", b"x")], commit_message="fix", repo_type="space")
    verdicts = {**release.verdicts, "broken_env": Verdict("broken_env", "openenv/broken_env-0.2.2", "FAIL", "0" * 40, "500")}
    decisions = {d.env: d for d in pin_envs(release.hub, release.config, verdicts, embedded_ok=True)}
    assert decisions["echo_env"].decision == "leave" and "verify it again" in decisions["echo_env"].reason
    assert "<0.2.1" in (release.config.repo / "envs" / "echo_env" / "pyproject.toml").read_text()
    assert decisions["broken_env"].decision == "pin" and decisions["broken_env"].changed
    assert decisions["broken_env"].as_json()["decision"] == "pinned"


def test_an_env_without_a_pyproject_is_an_error_for_that_env_only(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, ENVS, canonicals=())
    (release.config.repo / "envs" / "broken_env" / "pyproject.toml").unlink()
    decisions = {d.env: d for d in pin_envs(release.hub, release.config, release.verdicts, envs=["broken_env", "echo_env", "ghost_env"], embedded_ok=True)}
    assert "pyproject.toml not found" in (decisions["broken_env"].error or "")
    assert decisions["echo_env"].changed and decisions["echo_env"].decision == "lift"
    assert (decisions["ghost_env"].decision, decisions["ghost_env"].reason) == ("leave", "not verified")



def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def committed_checkout(release: Release) -> Path:
    """The release's checkout as a git repository with everything committed."""
    repo = release.config.repo
    git(repo, "init", "-q", "-b", "main")
    for key, value in (("user.name", "Dev"), ("user.email", "dev@example.com"), ("commit.gpgsign", "false")):
        git(repo, "config", key, value)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "initial")
    return repo


def test_pin_commit_commits_only_its_files_and_leaves_the_users_changes_as_they_were(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, ENVS, canonicals=())
    repo = committed_checkout(release)
    (repo / "NOTES.md").write_text("staged work\n")
    git(repo, "add", "NOTES.md")
    (repo / "envs" / "slow_env" / "pyproject.toml").write_text("# staged edit of an env pin leaves\n")
    git(repo, "add", "envs/slow_env/pyproject.toml")
    (repo / "envs" / "slow_env" / "pyproject.toml").write_text("# then edited again, unstaged\n")
    with (repo / "envs" / "broken_env" / "README.md").open("a") as readme:
        readme.write("unstaged line in an env pin writes\n")
    (repo / "scratch.txt").write_text("untracked\n")
    before = {args: git(repo, *args) for args in (("diff",), ("diff", "--cached"), ("status", "--porcelain"))}

    decisions = pin_envs(release.hub, release.config, release.verdicts, embedded_ok=True, commit=True)
    sha = commit_pins(repo, [d.result for d in decisions if d.result], version="0.2.2")

    assert sha == git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == [
        "envs/broken_env/pyproject.toml",
        "envs/echo_env/pyproject.toml",
    ]
    assert "<0.2.2" in git(repo, "show", "HEAD:envs/broken_env/pyproject.toml")
    assert {args: git(repo, *args) for args in before} == before  # every change of the user's, staged or not


def test_pin_commit_refuses_a_file_it_must_write_that_has_uncommitted_changes(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, ENVS, canonicals=())
    repo = committed_checkout(release)
    pyproject = repo / "envs" / "broken_env" / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("dependencies = [", 'dependencies = [\n    "my-wip-dependency",'))
    edited = {p: p.read_bytes() for p in (repo / "envs").rglob("*.toml")}
    head = git(repo, "rev-parse", "HEAD")

    with pytest.raises(UsageError) as refused:
        pin_envs(release.hub, release.config, release.verdicts, embedded_ok=True, commit=True)

    assert refused.value.exit_code == 2
    assert "envs/broken_env/pyproject.toml" in str(refused.value) and "commit or stash" in str(refused.value)
    assert {p: p.read_bytes() for p in edited} == edited  # nothing written, the lift of echo_env included
    assert git(repo, "rev-parse", "HEAD") == head
    git(repo, "add", "envs/broken_env/pyproject.toml")  # staged is as uncommitted as unstaged
    with pytest.raises(UsageError):
        pin_envs(release.hub, release.config, release.verdicts, embedded_ok=True, commit=True)
    decisions = pin_envs(release.hub, release.config, release.verdicts, embedded_ok=True)
    assert {d.env for d in decisions if d.changed} == {"broken_env", "echo_env"}  # without --commit it writes


def test_pin_commit_refuses_a_detached_head_and_an_unfinished_merge_before_writing(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, ENVS, canonicals=())
    repo = committed_checkout(release)
    tomls = {p: p.read_bytes() for p in (repo / "envs").rglob("*.toml")}
    git(repo, "checkout", "-q", "--detach")
    with pytest.raises(UsageError) as refused:
        pin_envs(release.hub, release.config, release.verdicts, embedded_ok=True, commit=True)
    assert refused.value.exit_code == 2 and "HEAD in" in str(refused.value) and "detached" in str(refused.value)
    assert {p: p.read_bytes() for p in tomls} == tomls

    git(repo, "checkout", "-q", "-b", "work")
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "NOTES.md").write_text("theirs\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-q", "-m", "theirs")
    git(repo, "checkout", "-q", "work")
    (repo / "NOTES.md").write_text("ours\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-q", "-m", "ours")
    subprocess.run(["git", "merge", "-q", "other"], cwd=repo, capture_output=True, check=False)  # a conflict
    with pytest.raises(UsageError) as refused:
        pin_envs(release.hub, release.config, release.verdicts, embedded_ok=True, commit=True)
    assert "in the middle of a merge" in str(refused.value) and "nothing is written" in str(refused.value)
    assert {p: p.read_bytes() for p in tomls} == tomls
