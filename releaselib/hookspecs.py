"""The hook specifications of openenv-release.

Every hook is a list hook: results from all plugins are collected, attributed to the
plugin that returned them, and checked for clashes by :mod:`releaselib.plugins`.
Hooks receive narrow arguments (an env name), never the whole release.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from releaselib.records import AllowedSecret, Check, EnvProfile, Fix, Probe, Signature

PROJECT = "openenv_release"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def openenv_release_envs() -> Iterable[EnvProfile]:
    """Profiles of the envs this plugin owns.

    An env claimed by two plugins, or a canonical repo claimed by two envs, is an error
    naming both plugins.

    A profile declares what the env needs beyond a CPU Space and the package registries:
    ``secrets`` it cannot run without (an optional one is no need: mention it in ``note``),
    ``hardware`` (a Space hardware flavor) and ``services`` (outside servers and downloads, in
    words). A rehearsal gives none of them, so there a FAIL of such an env is INCONCLUSIVE,
    naming them, and never pinned; a real release judges it as any other.

    Example::

        @hookimpl
        def openenv_release_envs():
            return (
                EnvProfile("repl_env", targets=(CanonicalTarget("repl"),)),
                EnvProfile("git_env", services=("a Gitea server (GITEA_URL)",)),
            )
    """
    return ()


@hookspec
def openenv_release_fixes(env: str) -> Iterable[Fix]:
    """Fixes to apply to ``env``'s staged tree, in order; return ``()`` for envs you don't own.

    :param env: the env directory name, e.g. ``"maze_env"``.
    """
    return ()


@hookspec
def openenv_release_probes(env: str) -> Iterable[Probe]:
    """Probes the verifier sends to ``env`` instead of schema-derived ones; ``()`` if none.

    :param env: the env directory name.
    """
    return ()


@hookspec
def openenv_release_allowed_secrets(env: str) -> Iterable[AllowedSecret]:
    """Known false positives of the secret scan in ``env``'s files; return ``()`` for envs you
    don't own.

    Staging scans every file it takes by content; a finding fails the env unless an
    ``AllowedSecret`` matches its file (an fnmatch pattern, checkout-relative) and, when given,
    its kind and the SHA-256 of its value (so another secret in that file still fails). An
    allowed finding is recorded in the ledger and the briefing with ``why``.

    :param env: the env directory name.

    Example::

        @hookimpl
        def openenv_release_allowed_secrets(env):
            if env != "my_env":
                return ()
            return (AllowedSecret("envs/my_env/docs/auth.md", why="AWS's documented example key",
                                  kind="AWS Access Key"),)
    """
    return ()


@hookspec
def openenv_release_checks() -> Iterable[Check]:
    """Static checks run on every staged tree."""
    return ()


@hookspec
def openenv_release_signatures() -> Iterable[Signature]:
    """Known runtime-error signatures and their fixes, matched by ``recover`` against the
    ``errorMessage`` of a Space in BUILD_ERROR or RUNTIME_ERROR.

    Example::

        @hookimpl
        def openenv_release_signatures():
            return (Signature("no-gpu", r"CUDA driver .* not found", "request GPU hardware"),)
    """
    return ()
