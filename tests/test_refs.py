"""Resolving the OpenEnv ref against a local bare repository standing in for the remote."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from releaselib.config import check_version
from releaselib.errors import UsageError
from releaselib.stage.refs import resolve_ref


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def sha_of(rev: str, repo: Path) -> str:
    done = subprocess.run(["git", "rev-parse", f"{rev}^{{commit}}"], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkout with tag v0.2.2 (publishing openenv-core), v0.3.1 (annotated, openenv) and
    main one commit further."""
    work = tmp_path_factory.mktemp("work")
    git("init", "-q", "-b", "main", cwd=work)
    git("config", "user.email", "t@example.com", cwd=work)
    git("config", "user.name", "t", cwd=work)
    for tag, name in (("v0.2.2", "openenv-core"), ("v0.3.1", "openenv"), ("", "openenv")):
        (work / "pyproject.toml").write_text(f'[project]\nname = "{name}"\nversion = "{tag[1:] or 1}"\n')
        git("add", ".", cwd=work)
        git("commit", "-qm", tag or "main", cwd=work)
        if tag:
            git("tag", *(["-a", "-m", tag] if tag == "v0.3.1" else []), tag, cwd=work)
    return work


@pytest.fixture(scope="module")
def remote(work: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bare remote of ``work``."""
    bare = tmp_path_factory.mktemp("remote") / "OpenEnv.git"
    git("clone", "-q", "--bare", str(work), str(bare), cwd=work)
    return bare


@pytest.mark.parametrize(
    ("version", "ref", "dist"),
    [
        ("0.2.2", "v0.2.2", "openenv-core"),
        ("v0.3.1", "v0.3.1", "openenv"),
        ("main", "main", "openenv"),
    ],
)
def test_tags_resolve_to_their_commit_with_the_name_it_publishes(
    remote: Path, work: Path, tmp_path: Path, version, ref, dist
) -> None:
    """Read by a shallow fetch of that commit: ``tmp_path`` is no git checkout."""
    resolution = resolve_ref(version, repo=tmp_path, remote=str(remote))
    assert (resolution.ref, resolution.dist, resolution.warning) == (ref, dist, None)
    assert resolution.sha == sha_of(ref, work)  # an annotated tag: its commit, not the tag
    assert resolution.label == f"{ref} at {resolution.sha[:12]}"


def test_an_untagged_version_falls_back_to_main_at_its_commit(
    remote: Path, work: Path, tmp_path: Path
) -> None:
    resolution = resolve_ref("0.3.2.dev0", repo=tmp_path, remote=str(remote))
    assert (resolution.ref, resolution.sha) == ("main", sha_of("main", work))
    assert "not tagged" in (resolution.warning or "")
    assert "fell back to main" in resolution.reason


def test_a_full_sha_the_remote_has_is_taken_as_is(remote: Path, work: Path, tmp_path: Path) -> None:
    sha = sha_of("v0.2.2", work)
    resolution = resolve_ref("0.2.2", ref=sha, repo=tmp_path, remote=str(remote))
    assert (resolution.ref, resolution.sha, resolution.dist) == (sha, sha, "openenv-core")
    assert resolution.label == sha[:12]


def test_a_full_sha_a_readable_remote_lacks_is_a_usage_error(remote: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"has no commit 0{40}"):
        resolve_ref("0.2.2", ref="0" * 40, repo=tmp_path, remote=str(remote))


def test_a_short_sha_is_expanded_from_the_checkout_or_refused(
    remote: Path, work: Path, tmp_path: Path
) -> None:
    sha = sha_of("v0.3.1", work)
    resolution = resolve_ref("0.2.2", ref=sha[:8], repo=work, remote=str(remote))
    assert (resolution.sha, resolution.dist) == (sha, "openenv")
    with pytest.raises(UsageError, match="no single commit starting with") as refused:
        resolve_ref("0.2.2", ref=sha[:8], repo=tmp_path, remote=str(remote))
    assert refused.value.exit_code == 2 and "full 40-hex" in (refused.value.remedy or "")


def test_a_sha_looking_version_is_a_version(remote: Path, tmp_path: Path) -> None:
    resolution = resolve_ref("abcdef1", repo=tmp_path, remote=str(remote))
    assert resolution.ref == "main" and "no tag abcdef1 or vabcdef1" in resolution.reason


def test_an_unreadable_remote_is_a_usage_error_whose_remedy_is_a_sha(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read the OpenEnv remote") as refused:
        resolve_ref("0.2.2", repo=tmp_path, remote=str(tmp_path / "nope"))
    assert refused.value.exit_code == 2 and "--ref SHA" in (refused.value.remedy or "")
    with pytest.raises(UsageError, match="--ref main: cannot read"):
        resolve_ref("0.2.2", ref="main", repo=tmp_path, remote=str(tmp_path / "nope"))


def test_with_an_unreadable_remote_a_full_sha_is_read_in_the_checkout(
    work: Path, tmp_path: Path
) -> None:
    sha = sha_of("v0.2.2", work)
    resolution = resolve_ref("0.2.2", ref=sha, repo=work, remote=str(tmp_path / "nope"))
    assert (resolution.sha, resolution.dist) == (sha, "openenv-core")
    assert "unchecked" in (resolution.warning or "")


def test_a_dist_that_cannot_be_read_is_never_guessed(tmp_path: Path) -> None:
    sha = "1" * 40
    with pytest.raises(UsageError, match="cannot read the distribution name") as refused:
        resolve_ref("0.2.2", ref=sha, repo=tmp_path, remote=str(tmp_path / "nope"))
    assert "--dist" in (refused.value.remedy or "")
    given = resolve_ref("0.2.2", ref=sha, repo=tmp_path, remote=str(tmp_path / "nope"), dist="openenv")
    assert (given.sha, given.dist) == (sha, "openenv")


def test_a_dist_flag_that_contradicts_the_commit_is_a_usage_error(
    remote: Path, tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match="publishes openenv-core"):
        resolve_ref("0.2.2", repo=tmp_path, remote=str(remote), dist="openenv")
    with pytest.raises(UsageError, match="not an OpenEnv distribution"):
        resolve_ref("0.2.2", repo=tmp_path, remote=str(remote), dist="numpy")


@pytest.mark.parametrize(
    "ref", ["-x", "--upload-pack=x", "a..b", "x.lock", "a b", "x@{1}", "v1^", "a/"]
)
def test_a_ref_that_is_not_a_git_ref_name_is_a_usage_error(tmp_path: Path, ref: str) -> None:
    with pytest.raises(UsageError, match="is not a usable git ref name"):
        resolve_ref("0.2.2", ref=ref, repo=tmp_path, remote=str(tmp_path / "no"))


def test_a_full_ref_name_is_looked_up_by_its_short_name(remote: Path, tmp_path: Path) -> None:
    resolution = resolve_ref("0.2.2", ref="refs/tags/v0.2.2", repo=tmp_path, remote=str(remote))
    assert resolution.ref == "v0.2.2" and resolution.dist == "openenv-core"


@pytest.mark.parametrize("version", ["v", "beta", "-"])
def test_a_version_without_a_digit_is_a_usage_error(version: str) -> None:
    with pytest.raises(UsageError, match="is not a version"):
        check_version(version)
    assert check_version("main") == "main"
