"""The release tuple is validated: base image, staged FROMs, version, --ref."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from releaselib.config import base_image, normalise_version
from releaselib.errors import UsageError
from releaselib.options import Options, build_config
from releaselib.stage.checks import check_from
from tests import test_bad_input, test_refs
from tests.test_bad_input import assert_one_line, run

checkout = test_bad_input.checkout  # fixtures shared with those modules
remote = test_refs.remote
work = test_refs.work


@pytest.mark.parametrize(
    ("repo", "fragment"),
    [
        ("ghcr.io/huggingface/openenv-base:latest", "already has a tag (latest)"),
        ("ghcr.io/x/base@sha256:" + "a" * 64, "already has a digest (sha256:"),
        ("ghcr.io/x/Base", "is not a valid image reference"),
        ("x:latest:latest", "is not a valid image reference"),
    ],
)
def test_a_base_image_with_a_tag_or_digest_is_a_usage_error(repo: str, fragment: str) -> None:
    with pytest.raises(UsageError) as raised:
        base_image(repo)
    assert fragment in raised.value.message and raised.value.exit_code == 2


def test_a_base_image_repository_gets_its_tag() -> None:
    assert (
        base_image("localhost:5000/openenv-base", "abcdef1")
        == "localhost:5000/openenv-base:abcdef1"
    )
    assert base_image() == "ghcr.io/huggingface/openenv-base:latest"


def test_base_image_with_a_tag_exits_2_through_the_console_script(
    checkout: Path, tmp_path: Path
) -> None:
    result = run(
        checkout, tmp_path, "stage", "--base-image", "ghcr.io/huggingface/openenv-base:latest"
    )
    assert_one_line(
        result,
        2,
        "--base-image 'ghcr.io/huggingface/openenv-base:latest' already has a tag",
        "--base-sha latest",
    )
    assert "latest:latest" not in result.stdout + result.stderr.split("error:")[0]


@pytest.mark.parametrize(
    ("base", "fragment"),
    [
        (
            "ghcr.io/huggingface/openenv-base:latest:latest",
            "FROM 'ghcr.io/huggingface/openenv-base:latest:latest' is not a valid image reference",
        ),
        ("Python:3.11", "is not a valid image reference"),
    ],
)
def test_every_staged_from_is_a_valid_image_reference(
    tmp_path: Path, base: str, fragment: str
) -> None:
    (tmp_path / "Dockerfile").write_text(f"FROM {base} AS builder\nFROM builder\nFROM scratch\n")
    [finding] = check_from(tmp_path)
    assert fragment in finding.message and finding.line == 1


def test_valid_froms_pass(tmp_path: Path) -> None:
    text = "FROM --platform=linux/amd64 python:3.10.12-slim AS b\nFROM b\nFROM nvidia/cuda:11.8.0-runtime-ubuntu22.04\n"
    (tmp_path / "Dockerfile").write_text(text)
    assert list(check_from(tmp_path)) == []


@pytest.mark.parametrize(
    ("given", "version", "noted"),
    [
        ("v0.2.2", "0.2.2", True),
        ("V0.3.0", "0.3.0", True),
        ("0.2.2", "0.2.2", False),
        ("20241101", "20241101", False),
        ("vnext1", "vnext1", False),
    ],
)
def test_version_normalisation(given: str, version: str, noted: bool) -> None:
    got, note = normalise_version(given)
    assert got == version and (note is not None) == noted


def configure(checkout: Path, tmp_path: Path, remote: Path, **options: str):
    return build_config(
        Options(repo=str(checkout), staging_dir=str(tmp_path / "s"), remote=str(remote), **options)
    )


def test_a_v_version_is_normalised_for_suffix_and_tag_with_a_note(
    checkout: Path, tmp_path: Path, remote: Path
) -> None:
    config, resolution = configure(checkout, tmp_path, remote, version="v0.2.2")
    assert (config.version, config.suffix, config.ref) == ("0.2.2", "-0.2.2", "v0.2.2")
    assert "--version v0.2.2 normalised to 0.2.2" in (resolution.warning or "")


def test_a_sha_looking_version_is_looked_up_as_a_tag(
    checkout: Path, tmp_path: Path, remote: Path
) -> None:
    tagged = tmp_path / "tagged.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(remote), str(tagged)], check=True)
    subprocess.run(["git", "--git-dir", str(tagged), "tag", "20241101", "v0.3.1"], check=True)
    config, resolution = configure(checkout, tmp_path, tagged, version="20241101")
    assert config.ref == "20241101" and "found on" in resolution.reason
    untagged, resolution = configure(checkout, tmp_path, remote, version="20241102")
    assert untagged.ref == "main" and "not tagged" in (resolution.warning or "")


def test_an_explicit_ref_differs_from_the_version_and_shows_its_resolution(
    checkout: Path, tmp_path: Path, remote: Path
) -> None:
    config, resolution = configure(checkout, tmp_path, remote, version="0.2.2", ref="v0.3.1")
    assert (config.version, config.ref, config.dist) == ("0.2.2", "v0.3.1", "openenv")
    assert config.sha == resolution.sha and config.pin_label == f"v0.3.1 at {config.sha[:12]}"
    assert resolution.reason == f"--ref v0.3.1: tag or branch found on {remote}"
    sha, resolution = configure(checkout, tmp_path, remote, version="0.2.2", ref=config.sha)
    assert (sha.ref, sha.sha) == (config.sha, config.sha)
    assert resolution.reason == f"--ref {config.sha}: a commit sha {remote} has"
    with pytest.raises(UsageError, match="--ref feature-x: no such tag or branch"):
        configure(checkout, tmp_path, remote, version="0.2.2", ref="feature-x")


def test_the_ref_flag_is_on_stage_and_release(checkout: Path, tmp_path: Path, remote: Path) -> None:
    result = run(
        checkout,
        tmp_path,
        "stage",
        "--version",
        "0.2.2",
        "--ref",
        "v0.3.1",
        OPENENV_RELEASE_REMOTE=str(remote),
    )
    assert result.returncode == 0, result.stderr
    assert "--ref v0.3.1: tag or branch found on" in result.stdout
    sha = test_refs.sha_of("v0.3.1", remote)
    assert f"v0.3.1 at {sha[:12]}" in result.stdout
    assert (
        f"git+https://github.com/huggingface/OpenEnv.git@{sha}"
        in (tmp_path / "staging" / "openenv" / "a_env-0.2.2" / "pyproject.toml").read_text()
    )
    helped = run(checkout, tmp_path, "release", "--help")
    assert "--ref=STRING" in helped.stdout


def test_verify_takes_its_tuple_from_the_ledger_and_refuses_one_it_cannot_read(
    tmp_path: Path,
) -> None:
    from releaselib.ledger.ledger import SCHEMA, Ledger
    from releaselib.verify.verify_tuple import verify_config

    path = tmp_path / "ledger-ns-0.3.0.json"
    release = {"namespace": "ns", "version": "0.3.0", "suffix": "-0.3.0", "ref": "v0.3.0"}
    Ledger.load(path, release)
    config, _, source = verify_config(Options(staging_dir=str(tmp_path)), ledger=str(path))
    assert (config.namespace, config.suffix, config.ref, source) == ("ns", "-0.3.0", "v0.3.0", path)
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "schema": SCHEMA + 1}))  # read as the ledger reads it
    with pytest.raises(UsageError) as refused:
        verify_config(Options(staging_dir=str(tmp_path)), ledger=str(path))
    assert refused.value.message.startswith(f"--ledger {path}: ledger schema {SCHEMA + 1} is newer")


def test_verify_with_a_version_reads_the_pin_from_the_releases_own_ledger(tmp_path: Path) -> None:
    """``verify --version V`` (or ``--repo``, whose version it is) shows the ref and distribution
    the release's ledger under the staging dir records, never "not resolved"."""
    from releaselib.ledger.ledger import Ledger
    from releaselib.verify.verify_tuple import NOT_RESOLVED, verify_config

    sha = "385de5ebb8d08d51d000d7dfc19de5f3c6a9c215"
    path = tmp_path / "ledger-ns-0.3.0.json"
    release = {"namespace": "ns", "version": "0.3.0", "suffix": "-0.3.0", "ref": "main", "sha": sha, "dist": "openenv-core"}
    Ledger.load(path, release)
    config, resolution, source = verify_config(Options(staging_dir=str(tmp_path), version="0.3.0", namespace="ns"))
    assert (config.ref, config.sha, config.dist, source) == ("main", sha, "openenv-core", path)
    assert resolution.label == f"main at {sha[:12]}" and resolution.reason == f"recorded in {path}"
    config, resolution, source = verify_config(Options(staging_dir=str(tmp_path), version="0.3.1", namespace="ns"))
    assert (config.ref, resolution.reason, source) == ("-", NOT_RESOLVED, None)  # no ledger of 0.3.1


def test_a_dist_that_cannot_be_read_at_the_pinned_commit_needs_the_dist_flag(
    checkout: Path, tmp_path: Path
) -> None:
    """The checkout is no git repository and the remote cannot be read: nothing can tell what
    the commit publishes, and the checkout's own name is never taken for it."""
    sha = "2" * 40
    unread = run(checkout, tmp_path, "stage", "--ref", sha, OPENENV_RELEASE_DIST="")
    assert_one_line(unread, 2, "cannot read the distribution name at 222222222222", "--dist")
    given = run(checkout, tmp_path, "stage", "--ref", sha, "--dist", "openenv-core", OPENENV_RELEASE_DIST="")
    assert given.returncode == 0, given.stderr
    pyproject = (tmp_path / "staging" / "openenv" / "a_env-0.2.2" / "pyproject.toml").read_text()
    assert f"openenv-core[core] @ git+https://github.com/huggingface/OpenEnv.git@{sha}" in pyproject
    fresh = ("--staging-dir", str(tmp_path / "fresh"))  # no ledger pins this release yet
    unreadable = run(checkout, tmp_path, "stage", *fresh, OPENENV_RELEASE_REF="", OPENENV_RELEASE_DIST="")
    assert_one_line(unreadable, 2, "cannot read the OpenEnv remote", "--ref SHA")


def test_a_rehearsal_pins_the_head_of_the_checkout_it_serves(tmp_path: Path) -> None:
    from releaselib.rehearse import copy_checkout, examples_dir

    served = copy_checkout(examples_dir(), tmp_path / "OpenEnv")
    head = subprocess.run(["git", "-C", str(served), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    config, resolution = build_config(Options(repo=str(served), staging_dir=str(tmp_path / "s")), rehearsal=True)
    assert (config.ref, config.sha, config.dist) == ("HEAD", head, "openenv")
    assert "rehearsed checkout's HEAD" in resolution.reason and str(tmp_path) not in resolution.reason
