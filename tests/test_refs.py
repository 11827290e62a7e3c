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


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare repo with tag v0.2.2 (publishing openenv-core), v0.3.1 (openenv) and main."""
    work = tmp_path_factory.mktemp("work")
    git("init", "-q", "-b", "main", cwd=work)
    git("config", "user.email", "t@example.com", cwd=work)
    git("config", "user.name", "t", cwd=work)
    for tag, name in (("v0.2.2", "openenv-core"), ("v0.3.1", "openenv")):
        (work / "pyproject.toml").write_text(f'[project]\nname = "{name}"\nversion = "{tag[1:]}"\n')
        git("add", ".", cwd=work)
        git("commit", "-qm", tag, cwd=work)
        git("tag", tag, cwd=work)
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
def test_tags_resolve_with_the_name_they_publish(
    remote: Path, tmp_path: Path, version, ref, dist
) -> None:
    resolution = resolve_ref(version, repo=tmp_path, checkout_dist="x", remote=str(remote))
    assert (resolution.ref, resolution.dist, resolution.warning) == (ref, dist, None)


def test_an_untagged_version_falls_back_to_main_with_a_warning(
    remote: Path, tmp_path: Path
) -> None:
    resolution = resolve_ref("0.3.2.dev0", repo=tmp_path, checkout_dist="x", remote=str(remote))
    assert resolution.ref == "main"
    assert "not tagged" in (resolution.warning or "")
    assert "fell back to main" in resolution.reason


def test_a_sha_given_as_ref_is_used_as_given(remote: Path, tmp_path: Path) -> None:
    resolution = resolve_ref(
        "0.2.2", ref="abcdef1", repo=tmp_path, checkout_dist="openenv", remote=str(remote)
    )
    assert resolution.ref == "abcdef1"
    assert resolution.dist == "openenv"
    assert "could not read pyproject.toml at abcdef1" in (resolution.warning or "")


def test_a_sha_looking_version_is_a_version(remote: Path, tmp_path: Path) -> None:
    resolution = resolve_ref("abcdef1", repo=tmp_path, checkout_dist="x", remote=str(remote))
    assert resolution.ref == "main" and "no tag abcdef1 or vabcdef1" in resolution.reason


def test_an_unreadable_remote_says_so_and_uses_the_checkout_name(tmp_path: Path) -> None:
    resolution = resolve_ref(
        "0.2.2", repo=tmp_path, checkout_dist="openenv", remote=str(tmp_path / "nope")
    )
    assert (resolution.ref, resolution.dist) == ("main", "openenv")
    assert "could not read" in resolution.reason
    assert "failed" in (resolution.warning or "")


@pytest.mark.parametrize(
    "ref", ["-x", "--upload-pack=x", "a..b", "x.lock", "a b", "x@{1}", "v1^", "a/"]
)
def test_a_ref_that_is_not_a_git_ref_name_is_a_usage_error(tmp_path: Path, ref: str) -> None:
    with pytest.raises(UsageError, match="is not a usable git ref name"):
        resolve_ref(
            "0.2.2", ref=ref, repo=tmp_path, checkout_dist="openenv", remote=str(tmp_path / "no")
        )


def test_a_full_ref_name_is_looked_up_by_its_short_name(remote: Path, tmp_path: Path) -> None:
    resolution = resolve_ref(
        "0.2.2", ref="refs/tags/v0.2.2", repo=tmp_path, checkout_dist="x", remote=str(remote)
    )
    assert resolution.ref == "v0.2.2" and resolution.dist == "openenv-core"


@pytest.mark.parametrize("version", ["v", "beta", "-"])
def test_a_version_without_a_digit_is_a_usage_error(version: str) -> None:
    with pytest.raises(UsageError, match="is not a version"):
        check_version(version)
    assert check_version("main") == "main"
