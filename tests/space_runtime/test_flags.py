"""Choosing a builder from the command line, and the local base image that matches the real one."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import cli

ROOT = Path(__file__).resolve().parents[2]


def test_an_unknown_builder_is_a_usage_error() -> None:
    done = cli("localhub.serve", "--builder", "docker-ish")
    assert done.returncode == 2 and "--builder 'docker-ish'" in done.stderr + done.stdout


def test_the_local_openenv_base_stand_in_has_no_git_like_the_real_one() -> None:
    script = (ROOT / "tools" / "make-local-images.sh").read_text()
    include = next(line for line in script.splitlines() if "--include=" in line)
    assert "git" not in include.split("--include=")[1].split()[0].split(",")
