"""nox sessions: tests, lint (ruff), types (mypy, strict on releaselib/)."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "lint", "types"]
nox.options.reuse_existing_virtualenvs = True


@nox.session(python="3.11")
def tests(session: nox.Session) -> None:
    """Run the test suite."""
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
