"""nox sessions: tests, lint (ruff), types (mypy, strict on releaselib/), and checks of staged
Dockerfiles on this machine: staged_lint, staged_run, staged_docker, and engine_builders (the
embedded Hub's podman/docker builders against a real engine).

The staged_* sessions reuse the installed environment (``venv_backend="none"``): staged_run starts
env servers with the Python that runs them, which needs openenv-core (about 450 MB, 35 s to
install), and the engine check imports releaselib. Run nox from the environment where
``pip install -e .[test]`` went. Their arguments go after ``--``: ``--repo PATH`` (default:
$OPENENV_RELEASE_REPO, else examples/), ``--corpus`` (the 34-env snapshot), then env names.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import nox

nox.options.sessions = ["tests", "lint", "types"]
nox.options.reuse_existing_virtualenvs = True


@nox.session(python="3.11")
def tests(session: nox.Session) -> None:
    """Run the test suite: the default run (venv, resume and slow left out), or what the posargs
    select (``-- -m "venv or resume or slow"``)."""
    session.install("-e", ".[test]")
    session.run("pytest", *session.posargs)


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff check over the whole project."""
    session.install("ruff")
    session.run("ruff", "check", ".")


@nox.session(python="3.11")
def types(session: nox.Session) -> None:
    """mypy: strict on releaselib/, standard elsewhere."""
    session.install("-e", ".[test]")
    session.run("mypy", *session.posargs)


STAGED_CHECKS = ("python", "-m", "releaselib.stage")


def staged_args(session: nox.Session) -> list[str]:
    """The posargs, with ``--corpus`` replaced by ``--repo`` of the snapshot, materialised."""
    args = list(session.posargs)
    if "--corpus" not in args:
        return args
    args.remove("--corpus")
    sys.path.insert(0, str(Path(__file__).parent))
    from tests.corpus import SNAPSHOT, materialise

    if not (SNAPSHOT / "envs").is_dir():
        session.error(f"no corpus snapshot at {SNAPSHOT}")
    dest = Path(session.create_tmp()) / "corpus"
    shutil.rmtree(dest, ignore_errors=True)
    return ["--repo", str(materialise(dest)), *args]


@nox.session(venv_backend="none", default=False)
def staged_lint(session: nox.Session) -> None:
    """Stage envs (all by default), run hadolint + static checks, print one table."""
    session.run(*STAGED_CHECKS, "lint", *staged_args(session), external=True)


@nox.session(venv_backend="none", default=False)
def staged_run(session: nox.Session) -> None:
    """Stage ENV, run it container-less like the embedded Hub, probe it [--start-timeout S (60)].

    ``-- [--repo PATH] [--start-timeout S] [--timeout S] ENV...``: S seconds for the server to
    listen, then seconds per probe request. A server that does not listen is reported with the
    last 40 lines of its stdout and stderr.
    """
    session.run(*STAGED_CHECKS, "run", *staged_args(session), external=True)


def needs_engine(session: nox.Session) -> None:
    """Skip the session, saying why, unless a container engine answers."""
    from releaselib.space_runtime.containers import EngineUnavailable, detect_engine

    try:
        detect_engine()
    except EngineUnavailable as exc:
        session.skip(exc.one_line())


@nox.session(venv_backend="none", default=False)
def staged_docker(session: nox.Session) -> None:
    """Stage ENV, build + run it in Docker/Podman, probe it, remove it; skips without an engine."""
    needs_engine(session)
    session.run(*STAGED_CHECKS, "docker", *staged_args(session), external=True)


@nox.session(venv_backend="none", default=False)
def engine_builders(session: nox.Session) -> None:
    """The embedded Hub's podman/docker builders against the engine; skips without one."""
    needs_engine(session)
    test = "tests/space_runtime/test_engine_real.py"
    session.run("pytest", "-q", "-rs", "-p", "no:cacheprovider", test, external=True)


@nox.session(venv_backend="none", default=False)
def resume(session: nox.Session) -> None:
    """The kill-and-resume e2e test, each kill point against a fresh Hub 8 times (or N: -- N)."""
    repeat = session.posargs[0] if session.posargs else "8"
    session.env["OPENENV_RELEASE_RESUME_REPEAT"] = repeat
    test = "tests/e2e/test_resume.py"
    session.run("pytest", "-q", "-p", "no:cacheprovider", "-m", "resume", test, external=True)


@nox.session(venv_backend="none", default=False)
def bench(session: nox.Session) -> None:
    """Every benchmark under bench/: one table, figures written to bench/results.json."""
    session.run(sys.executable, "bench/run_all.py")
