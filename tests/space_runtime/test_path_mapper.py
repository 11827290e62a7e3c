"""The builder's own workspace stays on this machine's paths, even when the image has its top
folder: a venv's ``bin`` under ``/tmp`` is not rewritten into an image that has ``/tmp``."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from releaselib.space_runtime.process import (
    IMAGE_PATH,
    _PathMapper,
    free_port,
    lay_out,
    start_layout,
)

WAIT = 10 * float(os.environ.get("OPENENV_RELEASE_TEST_WAIT_FACTOR", "1"))


@pytest.fixture
def run_dir() -> Iterator[Path]:
    """A builder workspace under /tmp, as a rehearsal's is without --keep."""
    with tempfile.TemporaryDirectory(prefix="mapper-", dir="/tmp") as folder:
        yield Path(folder)


def space_with_tmp(tree: Path) -> Path:
    """A Space whose image has /tmp (a COPY into it) and whose CMD is found on PATH only."""
    tree.mkdir(parents=True, exist_ok=True)
    (tree / "scratch.txt").write_text("image file\n")
    (tree / "Dockerfile").write_text(
        'FROM python:3.11-slim\nCOPY scratch.txt /tmp/scratch.txt\nCMD ["serve-here"]\n'
    )
    return tree


def test_the_venv_bin_under_tmp_is_not_mapped_into_an_image_with_tmp(run_dir: Path) -> None:
    env_bin = run_dir / "env-abc" / "bin"
    env_bin.mkdir(parents=True)
    seen = run_dir / "seen-path"
    script = env_bin / "serve-here"
    script.write_text(f'#!/bin/sh\nprintf %s "$PATH" > {seen}\n')
    script.chmod(0o755)
    layout = lay_out(space_with_tmp(run_dir / "tree"), run_dir, base_path=f"{env_bin}:{IMAGE_PATH}")
    assert (layout.root / "tmp" / "scratch.txt").is_file()  # the image has /tmp

    process = start_layout(layout, port=free_port())  # FileNotFoundError if bin was mapped
    deadline = time.monotonic() + WAIT
    while process.exit_code() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process.stop()

    assert process.exit_code() == 0
    assert seen.read_text().split(":")[0] == str(env_bin)


def test_image_paths_are_still_mapped_beside_the_workspace(run_dir: Path) -> None:
    layout = lay_out(space_with_tmp(run_dir / "tree"), run_dir, base_path=IMAGE_PATH)
    mapper = _PathMapper(layout.root, own=(run_dir,))
    text = f"{run_dir}/env-abc/bin:/tmp/scratch.txt:/usr/bin"
    assert mapper.map(text) == f"{run_dir}/env-abc/bin:{layout.root}/tmp/scratch.txt:/usr/bin"
