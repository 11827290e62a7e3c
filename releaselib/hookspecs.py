"""The hook specifications of openenv-release.

Every hook is a list hook: results from all plugins are collected, attributed to the
plugin that returned them, and checked for clashes by :mod:`releaselib.plugins`.
Hooks receive narrow arguments (an env name), never the whole release. Each returns an
iterable of records (:mod:`releaselib.records`); return ``()`` when you have nothing to add,
never ``None``.
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
    """The envs this plugin claims, one profile each.

    Claiming an env is what lets the plugin give it fixes and probes. An env claimed by two
    plugins, or a canonical repo claimed by two envs, is a PluginError naming both plugins.

    A profile declares the env's canonical ``targets`` (the unsuffixed Spaces it is promoted
    into, each with its Space variables), a longer ``probe_timeout``, and what the env needs
    beyond a CPU Space and the package registries: ``secrets`` it cannot run without (an
    optional one is no need: mention it in ``note``), ``hardware`` (a Space hardware flavor)
    and ``services`` (outside servers and downloads, in words). A rehearsal gives none of
    them, so there a FAIL of such an env is INCONCLUSIVE, naming them, and never pinned; a real
    release judges it as any other.

    :returns: ``EnvProfile`` records, one per env this plugin claims.

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
    """Fixes to apply to ``env``'s staged tree, in order, after staging rewrote its
    dependencies and before the static checks run.

    A ``Fix`` has a ``name``, a ``why`` (shown in the briefing) and ``apply(tree)``, which
    edits the staged tree through parsers (``env_plugins._common.edit_dockerfile``, tomlkit),
    never by text substitution, and returns what it did in a few words, or ``None`` when the
    tree already had it. A fix that raises fails that env only, naming the plugin.

    Ownership: an implementation that takes ``env`` returns fixes only for envs its plugin
    claims in ``openenv_release_envs``; a fix for any other env is a PluginError. A
    cross-cutting plugin, whose fix is keyed by a condition it detects rather than by an env's
    name, implements the hook *without* the ``env`` parameter: its fixes are applied to every
    env, and each ``apply`` returns ``None`` where its condition is absent.

    :param env: the env directory name under ``envs/``, e.g. ``"maze_env"``.
    :returns: ``Fix`` records for ``env``, in the order they are applied; ``()`` for envs the
        plugin does not claim.

    Example::

        @hookimpl
        def openenv_release_fixes(env):
            return (json_form_cmd(),) if env == "my_env" else ()

        # a cross-cutting plugin: no env parameter, the fix detects its own condition
        @hookimpl
        def openenv_release_fixes():
            return (Fix("no-pyc", "stale bytecode breaks imports", drop_pyc_files),)
    """
    return ()


@hookspec
def openenv_release_probes(env: str) -> Iterable[Probe]:
    """Requests the verifier sends to ``env``'s Space instead of the ones it derives from the
    env's ``/schema``.

    Give one where the schema-derived request cannot work: a step whose action needs a real
    value (a token id, a tool name), not a placeholder. A ``Probe`` is a ``name``, an HTTP
    ``method`` (GET or POST), a ``path``, a JSON ``body`` (for ``/step`` the whole request
    body, ``{"action": {...}}``) and the ``expect_status`` of a good answer.

    Ownership: probes come only from the plugin that claims ``env``; a probe for an env the
    plugin does not claim is a PluginError, and so are ``/step`` probes for one env from two
    plugins.

    :param env: the env directory name under ``envs/``.
    :returns: ``Probe`` records for ``env``, in the order they are sent; ``()`` for envs the
        plugin does not claim.

    Example::

        @hookimpl
        def openenv_release_probes(env):
            if env != "chat_env":
                return ()
            return (Probe("step", "POST", "/step", {"action": {"tokens": [15496]}}),)
    """
    return ()


@hookspec
def openenv_release_allowed_secrets(env: str) -> Iterable[AllowedSecret]:
    """Known false positives of the secret scan in ``env``'s files.

    Staging scans every file it takes by content; a finding fails the env unless an
    ``AllowedSecret`` matches its file (an fnmatch pattern under ``envs/<env>/``) and, when given,
    its kind and the SHA-256 of its value (so another secret in that file still fails). An
    allowed finding is recorded in the ledger and the briefing with ``why``.

    :param env: the env directory name under ``envs/``.
    :returns: ``AllowedSecret`` records for ``env``; ``()`` for envs the plugin does not claim.

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
    """Static checks run on every env's staged tree, after the fixes.

    A ``Check`` is a ``name`` (unique across plugins: a name defined twice is a PluginError),
    a one-line ``description`` and ``run(tree)``, which reads the staged tree and returns
    ``Finding`` records (check, file, line, message, remedy). Any finding fails the env's
    staging with that one line; an empty result passes. Checks read, they never edit: a
    problem the release must repair itself is a fix.

    :returns: ``Check`` records, run in order on every staged tree.

    Example::

        def no_latest_tag(tree):
            text = (tree / "Dockerfile").read_text()
            if ":latest" in text.splitlines()[0]:
                yield Finding("no-latest", "Dockerfile", 1, "FROM uses :latest",
                              "pin the base image")

        @hookimpl
        def openenv_release_checks():
            return (Check("no-latest", "the base image is pinned", no_latest_tag),)
    """
    return ()


@hookspec
def openenv_release_signatures() -> Iterable[Signature]:
    """Known runtime-error signatures and their fixes, matched by ``recover`` against the
    ``errorMessage`` of a Space in BUILD_ERROR or RUNTIME_ERROR.

    A ``Signature`` is a ``name`` (unique across plugins), a regular expression ``pattern``
    searched in the error message (multi-line), and the ``fix`` to tell the user.

    :returns: ``Signature`` records; ``recover`` names every one that matches.

    Example::

        @hookimpl
        def openenv_release_signatures():
            return (Signature("no-gpu", r"CUDA driver .* not found", "request GPU hardware"),)
    """
    return ()
