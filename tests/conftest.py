"""Fixtures every test can use: a checkout of the example envs and the Hub client reset. What
tests share beyond fixtures (the wait factor, the console-script runner, the release config,
small checkouts) is in ``tests/helpers.py``."""

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from huggingface_hub import close_session, set_client_factory
from huggingface_hub.utils._http import default_client_factory

from tests.helpers import copy_examples, offline, waits

pytest_plugins = ["releaselib.localhub.fixtures"]


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """pytest-timeout's per-test limit (ini ``timeout``) scales with the wait factor too, unless
    ``--timeout`` is given; the content scan keeps its clean verdicts in a folder of the run."""
    if config.getoption("timeout", None) is None and config.getini("timeout"):
        config.option.timeout = waits(float(config.getini("timeout")))
    if "OPENENV_RELEASE_SCAN_CACHE" not in os.environ:  # the scan's verdicts: not the user's
        folder = tempfile.mkdtemp(prefix="openenv-release-scan-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        os.environ["OPENENV_RELEASE_SCAN_CACHE"] = folder


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: one worker more than the usable cores. A worker often waits for a Space's
    server to start in its own process; the extra one keeps the cores busy meanwhile (2 cores:
    3 workers ran the default suite in 253 s against 359 s for 2, same machine and load).
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` and ``-n logical`` keep their meaning (None: xdist decides)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") or config.option.numprocesses == "logical":
        return None
    return len(os.sched_getaffinity(0)) + 1


@pytest.fixture(autouse=True)
def default_hub_client() -> Iterator[None]:
    """``Hub.connect`` installs a retrying client process-wide (as the CLI wants); put the
    plain one back after each test so tests of the bare client see its own behaviour."""
    yield
    set_client_factory(default_client_factory)
    close_session()


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of ``examples/`` (five envs) at ``tmp_path/OpenEnv``, with no git remote to ask
    (``offline``: pinned to TEST_SHA). Test files that need another checkout define their own."""
    for key, value in offline(tmp_path).items():
        monkeypatch.setenv(key, value)
    return copy_examples(tmp_path / "OpenEnv")

