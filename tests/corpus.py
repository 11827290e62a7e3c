"""Materialise an OpenEnv-shaped checkout from ../shared/openenv-snapshot (34 real envs)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import dockerfile
import pytest

SNAPSHOT = Path(__file__).resolve().parents[2] / "shared" / "openenv-snapshot"


def snapshot_or_skip() -> Path:
    if not (SNAPSHOT / "envs").is_dir():
        pytest.skip(f"corpus snapshot not found at {SNAPSHOT} (../shared is absent)")
    return SNAPSHOT


def materialise(dest: Path) -> Path:
    """Copy the snapshot's envs and root pyproject; empty stand-ins for every src/ path."""
    snapshot = snapshot_or_skip()
    shutil.copytree(snapshot / "envs", dest / "envs")
    shutil.copyfile(snapshot / "pyproject.toml", dest / "pyproject.toml")
    for line in (snapshot / "SRC_LAYOUT.txt").read_text().splitlines():
        if line.strip():
            path = dest / line.strip()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
    add_copy_stand_ins(dest)
    return dest


def git_materialise(dest: Path) -> Path:
    """``materialise``, committed as a git repository on ``main`` (what a release ref names)."""
    checkout = materialise(dest)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "corpus"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args],
            cwd=checkout,
            check=True,
        )
    return checkout


def add_copy_stand_ins(checkout: Path) -> None:
    """The snapshot is data only: give every env path a Dockerfile COPYs an empty stand-in."""
    for env in sorted((checkout / "envs").iterdir()):
        docker = env / "server" / "Dockerfile"
        docker = docker if docker.is_file() else env / "Dockerfile"
        for command in dockerfile.parse_file(str(docker)):
            if command.cmd != "COPY" or any(f.startswith("--from") for f in command.flags):
                continue
            for source in command.value[:-1]:
                path = env / source
                if source.startswith(("envs/", "src/")) or "*" in source or path.exists():
                    continue
                if "." in Path(source).name:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.touch()
                else:  # git holds no empty folder: the real one has files
                    path.mkdir(parents=True)
                    (path / ".gitkeep").touch()


def tree_digest(root: Path) -> str:
    """A digest of every path, mode and byte under ``root``."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(oct(path.stat().st_mode).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()
