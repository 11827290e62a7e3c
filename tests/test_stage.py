"""Staging one env: layout, stripping, symlinks, manifest, failures that stay per env."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from releaselib.plugins import PluginRegistry
from releaselib.stage.discover import discover_envs
from releaselib.stage.stage_env import stage_envs
from releaselib.stage.staged_tree import build_manifest, git_blob_sha1, manifest_path
from tests.corpus import tree_digest
from tests.helpers import (
    DOCKERFILE,
    TEST_SHA,
    builtin_registry,
    make_env,
    openenv_root,
    release_config,
    write,
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = openenv_root(tmp_path / "OpenEnv")
    write(root / "src" / "openenv" / "__pycache__" / "x.cpython-311.pyc", b"\0")
    return root


def stage(repo: Path, tmp_path: Path, registry: PluginRegistry | None = None):
    config = release_config(repo, tmp_path / "staging")
    registry = registry or builtin_registry()
    return {s.env: s for s in stage_envs(config, discover_envs(repo), registry)}


def test_layout_strips_junk_and_keeps_the_checkout_intact(repo: Path, tmp_path: Path) -> None:
    make_env(
        repo,
        "a_env",
        **{
            "uv.lock": "lock",
            ".env": "SECRET=1",
            ".env.local": "x",
            ".venv/bin/python": "x",
            "node_modules/m/index.js": "x",
            "server/__pycache__/app.cpython-311.pyc": "x",
            ".DS_Store": "x",
            "data/keep.txt": "keep",
        },
    )
    before = tree_digest(repo)
    staged = stage(repo, tmp_path)["a_env"]
    assert staged.ok, staged.error
    files = set(staged.manifest)
    assert {
        "Dockerfile",
        "README.md",
        "pyproject.toml",
        "server/app.py",
        "data/keep.txt",
        "envs/a_env/server/app.py",
        "envs/a_env/data/keep.txt",
        "src/openenv/core/__init__.py",
    } <= files
    junk = (
        "uv.lock",
        ".env",
        ".env.local",
        ".venv/",
        "node_modules/",
        "__pycache__/",
        ".DS_Store",
        ".pyc",
    )
    assert not [f for f in files if any(j in f for j in junk)]
    assert tree_digest(repo) == before
    assert staged.space_id == "openenv/a_env-0.2.2"
    assert staged.staged_dir == tmp_path / "staging" / "openenv" / "a_env-0.2.2"


def test_the_env_pyproject_at_the_root_is_pinned(repo: Path, tmp_path: Path) -> None:
    make_env(repo, "a_env")
    staged = stage(repo, tmp_path)["a_env"]
    pin = f"openenv-core[core] @ git+https://github.com/huggingface/OpenEnv.git@{TEST_SHA}"
    for rel in ("pyproject.toml", "envs/a_env/pyproject.toml"):
        assert pin in (staged.staged_dir / rel).read_text()
    assert {c.file for c in staged.changes} >= {"pyproject.toml", "envs/a_env/pyproject.toml"}


def test_manifest_holds_git_blob_ids_and_is_written_beside_the_tree(
    repo: Path, tmp_path: Path
) -> None:
    make_env(repo, "a_env")
    staged = stage(repo, tmp_path)["a_env"]
    data = (staged.staged_dir / "server" / "app.py").read_bytes()
    assert staged.manifest["server/app.py"] == (git_blob_sha1(data), len(data))
    assert git_blob_sha1(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    written = json.loads(manifest_path(staged.staged_dir).read_text())
    assert written["hash"] == staged.manifest_hash
    assert written["files"]["server/app.py"]["sha1"] == staged.manifest["server/app.py"][0]
    assert build_manifest(staged.staged_dir) == dict(staged.manifest)


def test_restaging_unchanged_gives_the_same_manifest_hash(repo: Path, tmp_path: Path) -> None:
    make_env(repo, "a_env")
    first = stage(repo, tmp_path)["a_env"].manifest_hash
    assert stage(repo, tmp_path)["a_env"].manifest_hash == first
    (repo / "envs" / "a_env" / "server" / "app.py").write_text("app = 1\n")
    assert stage(repo, tmp_path)["a_env"].manifest_hash != first


def test_a_symlink_leaving_the_checkout_fails_that_env_only(repo: Path, tmp_path: Path) -> None:
    make_env(repo, "a_env")
    bad = make_env(repo, "b_env")
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    os.symlink(outside, bad / "leak.txt")
    results = stage(repo, tmp_path)
    assert results["a_env"].ok
    assert not results["b_env"].ok
    assert "leak.txt: symlink points outside the checkout" in (results["b_env"].error or "")
    assert not results["b_env"].staged_dir.exists()


def test_a_symlink_inside_the_checkout_is_copied_as_a_file(repo: Path, tmp_path: Path) -> None:
    env = make_env(repo, "a_env")
    os.symlink(env / "pyproject.toml", env / "link.toml")
    staged = stage(repo, tmp_path)["a_env"]
    assert staged.ok and not (staged.staged_dir / "link.toml").is_symlink()


def test_an_unparseable_pyproject_names_the_file_and_line(repo: Path, tmp_path: Path) -> None:
    make_env(repo, "a_env", **{"pyproject.toml": '[project]\nname = "x"\ndependencies = [\n'})
    make_env(repo, "b_env")
    results = stage(repo, tmp_path)
    assert results["b_env"].ok
    assert results["a_env"].error is not None
    assert (
        "pyproject.toml:" in results["a_env"].error and "not valid TOML" in results["a_env"].error
    )


def test_a_non_utf8_dockerfile_is_named(repo: Path, tmp_path: Path) -> None:
    make_env(repo, "a_env", **{"server/Dockerfile": b"FROM python:3.11\nLABEL x=\xff\n"})
    result = stage(repo, tmp_path)["a_env"]
    assert not result.ok and "server/Dockerfile: not UTF-8" in (result.error or "")


def test_a_non_deployable_env_is_reported_not_staged(repo: Path, tmp_path: Path) -> None:
    (repo / "envs" / "empty_env").mkdir(parents=True)
    result = stage(repo, tmp_path)["empty_env"]
    assert not result.ok and "not deployable" in (result.error or "")


def test_legacy_src_core_is_staged_only_when_the_dockerfile_copies_it(
    repo: Path, tmp_path: Path
) -> None:
    make_env(repo, "a_env")
    make_env(
        repo,
        "legacy_env",
        **{
            "server/Dockerfile": DOCKERFILE.replace(
                "COPY . /app/env", "COPY . /app/env\nCOPY src/core/ /app/src/core/"
            )
        },
    )
    results = stage(repo, tmp_path)
    assert not (results["a_env"].staged_dir / "src" / "core").exists()
    legacy = results["legacy_env"]
    assert (legacy.staged_dir / "src" / "core" / "__init__.py").is_file()
    assert "COPY src/openenv/ /app/src/openenv/" in (legacy.staged_dir / "Dockerfile").read_text()
