"""Built-in plugin: signatures of known Space failures and their fixes, for ``recover``.

Each pattern is matched against the Space's ``errorMessage`` (the tail of its build or run log).
"""

from __future__ import annotations

from releaselib.hookspecs import hookimpl
from releaselib.records import Signature

#: Stdlib modules a stray ``types.py``/``enum.py``/... on PYTHONPATH is known to shadow.
_SHADOWED = "types|enum|dataclasses|typing|abc|functools|collections|copy|re|weakref|_weakrefset"

SIGNATURES = (
    Signature(
        "stdlib-shadowing",
        rf"cannot import name '\w+' from (?:partially initialized module '(?:{_SHADOWED})'"
        rf"|'(?:{_SHADOWED})' \((?![^)]*/lib/python3)[^)]*\))",
        "a directory on PYTHONPATH holds a stdlib-named module (e.g. /app/src/core/types.py): "
        "stage src/openenv/ into /app/src/openenv/ and put only /app/src on PYTHONPATH "
        "(the legacy_pythonpath fix), then redeploy",
    ),
    Signature(
        "missing-dependency",
        r"ModuleNotFoundError: No module named '[^']+'",
        "the image lacks a package the app imports: add it to the env's pyproject.toml "
        "dependencies (or to the Dockerfile's install step) and redeploy",
    ),
    Signature(
        "git-missing",
        r"Git executable not found|Cannot find command 'git'",
        "the build installs a git+ requirement on an image without git (openenv-base and "
        "python:*-slim have none): install git in that stage before the install (the "
        "git-before-uv-sync fix), then redeploy",
    ),
    Signature(
        "uv-lock-mismatch",
        r"uv\.lock.*(?:needs to be updated|--frozen|--locked)|Failed to parse `?uv\.lock",
        "the Space holds a uv.lock that does not match its pyproject.toml, so `uv sync --frozen` "
        "fails: run `uv lock` for the env, or redeploy so the stale uv.lock is deleted",
    ),
    Signature(
        "malformed-cmd",
        r"/bin/sh: (?:\d+: )?\[[^\n]*not found|exec: \"?\[",
        "the Dockerfile's CMD was joined with a line appended without a newline, so its JSON "
        "exec form broke: end the Dockerfile with a newline and keep CMD on its own line",
    ),
)


@hookimpl
def openenv_release_signatures() -> tuple[Signature, ...]:
    return SIGNATURES
