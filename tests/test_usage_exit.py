"""The program's entry point maps invoke's parse errors to the README's usage exit code."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import this_checkout, waits


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        pytest.param(["deploy", "--no-such-flag"], "No idea what '--no-such-flag' is!", id="unknown-flag"),
        pytest.param(["no-such-task"], "No idea what 'no-such-task' is!", id="unknown-task"),
        pytest.param(["--help", "no-such-task"], "No idea what 'no-such-task' is!", id="help-for-an-unknown-task"),
        pytest.param(["--list", "no.such"], "no collection named 'no.such'", id="list-an-unknown-collection"),
    ],
)
def test_a_parse_error_is_one_line_and_exit_2(argv: list[str], named: str, tmp_path) -> None:
    """Run as ``python -m openenv_release.cli``, as the console script runs."""
    result = subprocess.run(
        [sys.executable, "-m", "openenv_release.cli", *argv], cwd=tmp_path, env=this_checkout(os.environ),
        capture_output=True, text=True, timeout=waits(60),
    )
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert result.stderr.startswith(f"error: {named}") and result.stderr.count("\n") == 1, result.stderr
    assert "openenv-release --help <task>" in result.stderr
