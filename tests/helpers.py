"""What the tests share: the wait factor, the console-script runner, OpenEnv-shaped checkouts
and a release config, golden files. ``tests/conftest.py`` imports them (its ``checkout`` fixture
is ``copy_examples``)."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from releaselib.config import ReleaseConfig
from releaselib.localhub.scenario import Scenario, SpaceBehaviour
from releaselib.plugins import PluginRegistry, get_plugin_manager

PROJECT = Path(__file__).resolve().parents[1]
#: an embedded Hub whose Spaces never start (they stay APP_STARTING), for tests of uploads and
#: listings: a real openenv-core server costs seconds of CPU to start
UPLOADS_ONLY = Scenario(spaces=(SpaceBehaviour(stuck_starting=True),))
EXAMPLES = PROJECT / "examples"
#: the console script, run with ``python -c`` so it imports this checkout's code
MAIN = "from openenv_release.cli import main; main()"
#: every wait, deadline and time-out in a test is multiplied by this (``.ci/run`` raises it on
#: a loaded machine)
WAIT_FACTOR = float(os.environ.get("OPENENV_RELEASE_TEST_WAIT_FACTOR") or 1)


def waits(seconds: float) -> float:
    """``seconds`` scaled by the wait factor."""
    return seconds * WAIT_FACTOR


def wait_flag(seconds: float) -> str:
    """``seconds`` scaled by the wait factor, as a ``--wait``/``--timeout`` flag's value."""
    return f"{waits(seconds):g}"


def this_checkout(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with this checkout first on ``PYTHONPATH``, so a subprocess run from any
    directory imports this code, not the installed copy's."""
    paths = [str(PROJECT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    return {**env, "PYTHONPATH": os.pathsep.join(paths)}


#: The OpenEnv commit a release with no remote to read pins (``offline``); no remote has it.
TEST_SHA = "3f9c2e1a4b5d60718293a4b5c6d7e8f901234567"


def offline(where: Path) -> dict[str, str]:
    """The variables of a release that reads no git remote: an unreadable ``--remote`` (under
    ``where``), the pin given as ``--ref TEST_SHA`` and the distribution as ``--dist openenv``
    (a commit no remote has cannot tell its name)."""
    return {
        "OPENENV_RELEASE_REMOTE": str(where / "no-remote"),
        "OPENENV_RELEASE_REF": TEST_SHA,
        "OPENENV_RELEASE_DIST": "openenv",
    }


def user_env(home: Path, **extra: str) -> dict[str, str]:
    """A bare environment, as a user's shell might have: ``HOME`` at ``home``, no git remote
    (``offline``), and the test run's folder for the content scan's verdicts (conftest)."""
    bare = {"PATH": "/usr/bin:/bin", "HOME": str(home), **offline(home)}
    if "OPENENV_RELEASE_SCAN_CACHE" in os.environ:
        bare["OPENENV_RELEASE_SCAN_CACHE"] = os.environ["OPENENV_RELEASE_SCAN_CACHE"]
    return {**bare, **extra}


def cli(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    **popen: Any,
) -> subprocess.CompletedProcess[str]:
    """Run the console script in a subprocess (text, output captured unless redirected), in
    ``env`` (this process's environment if None)."""
    if not {"stdout", "stderr"} & popen.keys():
        popen["capture_output"] = True
    return subprocess.run(
        [sys.executable, "-c", MAIN, *args], cwd=cwd, env=this_checkout(env or os.environ),
        text=True, timeout=waits(timeout), **popen,
    )


def user_cli(*args: str, cwd: Path = PROJECT, **env: str) -> subprocess.CompletedProcess[str]:
    """The console script as a user runs it: from ``cwd``, in a bare environment plus ``env``."""
    return cli(*args, cwd=cwd, env=user_env(cwd, **env))


def task(*args: str, cwd: Path = PROJECT, **env: str) -> subprocess.CompletedProcess[str]:
    """The console script's program run in this process, as ``user_cli`` runs it in a
    subprocess: from ``cwd``, in a bare environment plus ``env``, output and exit code captured.
    Only for what the tool reads after start-up (flags, files, the Hub's answers): variables
    read at import (``HF_HUB_OFFLINE``) and plugins on ``PYTHONPATH`` need ``user_cli``."""
    from openenv_release.cli import program

    saved, here = dict(os.environ), os.getcwd()
    out, err, code = io.StringIO(), io.StringIO(), 0
    bare = user_env(cwd, **env)
    try:
        os.environ.clear()
        os.environ.update(bare)
        os.chdir(cwd)
        with redirect_stdout(out), redirect_stderr(err):
            try:
                program.run(["openenv-release", *args])
            except SystemExit as exc:
                if isinstance(exc.code, str):
                    err.write(exc.code + "\n")
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        os.chdir(here)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def release_config(repo: Path, staging: Path | None = None, **changes: Any) -> ReleaseConfig:
    """The 0.2.2 release tuple the tests use, for ``repo`` (``ref`` v0.2.2 at TEST_SHA, dist
    openenv-core)."""
    base = ReleaseConfig(
        repo=repo, version="0.2.2", ref="v0.2.2", ref_reason="test", dist="openenv-core",
        sha=TEST_SHA,
        suffix="-0.2.2", staging_dir=staging if staging is not None else repo.parent / "staging",
    )
    return base.with_(**changes)


def builtin_registry(*plugins: object) -> PluginRegistry:
    """The built-in env plugins (no entry points), plus ``plugins``."""
    manager = get_plugin_manager(entry_points=False)
    for plugin in plugins:
        manager.register(plugin)
    return PluginRegistry(manager)


#: a small env that stages cleanly (``make_env``)
DOCKERFILE = """\
ARG BASE_IMAGE=ghcr.io/huggingface/openenv-base:latest
FROM ${BASE_IMAGE}
WORKDIR /app
COPY . /app/env
RUN apt-get update && apt-get install -y git && pip install -e /app/env
ENV PYTHONPATH="/app/env:$PYTHONPATH"
CMD ["sh", "-c", "cd /app/env && uvicorn server.app:app --host 0.0.0.0 --port 8000"]
"""
PYPROJECT = '[project]\nname = "x"\nversion = "0.1.0"\ndependencies = ["openenv[core]>=0.2.1"]\n'
README = "---\ntitle: X\nsdk: docker\napp_port: 8000\ntags:\n  - openenv\n---\n# X\n"


def write(path: Path, text: str | bytes) -> None:
    """Write ``text`` (or bytes) at ``path``, making its folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)


def openenv_root(root: Path) -> Path:
    """An OpenEnv checkout's top at ``root``: its pyproject (0.2.2) and ``openenv.core``."""
    write(root / "pyproject.toml", '[project]\nname = "openenv"\nversion = "0.2.2"\n')
    write(root / "src" / "openenv" / "core" / "__init__.py", "")
    return root


def make_env(repo: Path, name: str, **extra: str | bytes) -> Path:
    """``envs/<name>`` in ``repo``: Dockerfile, app, pyproject, README, plus ``extra`` files."""
    env = repo / "envs" / name
    write(env / "server" / "Dockerfile", DOCKERFILE)
    write(env / "server" / "app.py", "app = None\n")
    write(env / "pyproject.toml", PYPROJECT)
    write(env / "README.md", README)
    for rel, text in extra.items():
        write(env / rel, text)
    return env


def assert_golden(path: Path, actual: str) -> None:
    """``actual`` is the golden file at ``path``, byte for byte; ``UPDATE_GOLDEN=1`` rewrites
    the file first."""
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(actual.encode("utf-8"))
    assert actual == path.read_bytes().decode("utf-8"), f"differs from {path.name}"


def copy_examples(dest: Path) -> Path:
    """A copy of ``examples/`` (an OpenEnv-shaped checkout of five envs) at ``dest``."""
    shutil.copytree(EXAMPLES, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest
