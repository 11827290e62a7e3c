"""Loading plugins and collecting their records.

``get_plugin_manager()`` builds a fresh manager (never a module global): built-in plugins from
an explicit tuple, then outside plugins from the ``openenv_release`` entry-point group, minus
those named in ``OPENENV_RELEASE_DISABLE_PLUGINS`` (comma-separated). ``check_pending()`` makes
a misspelled hook an error. ``PluginRegistry`` calls each plugin's implementation through
pluggy's hook machinery (a subset caller of ``pm.hook`` holding that one plugin), so tracing
and monitoring see every call while every record, and every exception, is attributed to its
plugin; clashes are errors naming both plugins.

Ownership: a fix, probe or allowed secret for an env comes from the plugin that claims the
env in ``openenv_release_envs``. The one exception is a cross-cutting fix: an implementation of
``openenv_release_fixes`` without the ``env`` parameter applies its fixes to every env, each
keyed by the condition its ``apply`` detects. An allowed secret names files under
``envs/<env>/`` only.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import pluggy
from pluggy import HookImpl

from releaselib import hookspecs
from releaselib.errors import PluginError
from releaselib.records import (
    AllowedSecret,
    CanonicalTarget,
    Check,
    EnvProfile,
    Fix,
    Probe,
    Signature,
)

DISABLE_VAR = "OPENENV_RELEASE_DISABLE_PLUGINS"
TRACE_VAR = "OPENENV_RELEASE_TRACE_PLUGINS"

T = TypeVar("T")


def builtin_plugins() -> tuple[str, ...]:
    """Module paths of the built-in plugins (``env_plugins.BUILTIN_PLUGINS``)."""
    from env_plugins import BUILTIN_PLUGINS

    return BUILTIN_PLUGINS


def get_plugin_manager(
    builtins: Sequence[str] | None = None,
    *,
    entry_points: bool = True,
    disabled: Iterable[str] | None = None,
) -> pluggy.PluginManager:
    """Return a new plugin manager with built-in and entry-point plugins registered."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    if disabled is None:
        disabled = [n.strip() for n in os.environ.get(DISABLE_VAR, "").split(",") if n.strip()]
    for name in disabled:
        pm.set_blocked(name)
    for module_path in builtin_plugins() if builtins is None else builtins:
        if pm.is_blocked(module_path):
            continue
        try:
            module = importlib.import_module(module_path)
        except Exception as exc:  # a broken plugin names itself, never a bare traceback
            raise PluginError(
                f"plugin {module_path} failed to import: {type(exc).__name__}: {exc}",
                remedy=f"fix it or disable it with {DISABLE_VAR}={module_path}",
            ) from exc
        pm.register(module, name=module_path)
    if entry_points:
        try:
            pm.load_setuptools_entrypoints(hookspecs.PROJECT)
        except Exception as exc:
            raise PluginError(
                f"an entry-point plugin of group {hookspecs.PROJECT!r} failed to load: {exc}",
                remedy=f"fix it or disable it with {DISABLE_VAR}=<name>",
            ) from exc
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(
            f"plugin {exc.plugin!r} implements an unknown hook: {exc}",
            remedy="check the hook name against releaselib/hookspecs.py",
        ) from exc
    if os.environ.get(TRACE_VAR):
        trace(pm, sys.stderr.write)
    return pm


def trace(pm: pluggy.PluginManager, write: Callable[[str], object]) -> None:
    """Write every hook call of ``pm`` to ``write``: pluggy's trace (hook, arguments, results),
    with the plugin that answers each call."""
    hooktrace = pm.trace.root.get("hook")

    def before(hook_name: str, impls: Sequence[HookImpl], kwargs: Mapping[str, object]) -> None:
        hooktrace("plugin:", ", ".join(impl.plugin_name for impl in impls))

    def after(*args: object) -> None:
        pass

    pm.trace.root.setwriter(write)
    pm.add_hookcall_monitoring(before, after)
    pm.enable_tracing()


@dataclass(frozen=True)
class Owned(Generic[T]):
    """A record and the plugin that returned it."""

    plugin: str
    record: T


Named = TypeVar("Named", Check, Signature)


def named_once(what: str, found: list[Owned[Named]]) -> list[Owned[Named]]:
    """``found``, or PluginError naming both plugins when two records share a name."""
    seen: dict[str, str] = {}
    for owned in found:
        name = owned.record.name
        if name in seen:
            raise PluginError(
                f"{what} {name} is defined by {seen[name]} and {owned.plugin}",
                remedy="rename one of them",
            )
        seen[name] = owned.plugin
    return found


class PluginRegistry:
    """The plugins' answers, attributed and checked for clashes."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self._profiles: dict[str, Owned[EnvProfile]] | None = None

    def _collect(self, hook_name: str, kind: type[T], **kwargs: Any) -> list[Owned[T]]:
        return [owned for _, found in self._calls(hook_name, kind, **kwargs) for owned in found]

    def _calls(
        self, hook_name: str, kind: type[T], **kwargs: Any
    ) -> Iterator[tuple[HookImpl, list[Owned[T]]]]:
        """Each implementation of ``hook_name`` (registration order) and its checked records."""
        hook = getattr(self.pm.hook, hook_name)
        impls = [i for i in hook.get_hookimpls() if not (i.wrapper or i.hookwrapper)]
        for impl in impls:  # each alone, inside every wrapper
            plugin = impl.plugin_name
            caller = self.pm.subset_hook_caller(
                hook_name, [other.plugin for other in impls if other is not impl]
            )
            if [i for i in caller.get_hookimpls() if i in impls] != [impl]:
                raise PluginError(
                    f"plugin {plugin} implements {hook_name} under another name",
                    remedy=f"name the function {hook_name}",
                )
            try:
                answers = caller(**kwargs)
                records = [record for answer in answers for record in answer or ()]
            except Exception as exc:
                raise PluginError(
                    f"plugin {plugin} raised in {hook_name}: {type(exc).__name__}: {exc}",
                    remedy=f"fix the plugin or disable it with {DISABLE_VAR}={plugin}",
                ) from exc
            for record in records:
                if not isinstance(record, kind):
                    raise PluginError(
                        f"plugin {plugin} returned {type(record).__name__} from {hook_name}",
                        remedy=f"return {kind.__name__} records",
                    )
            yield impl, [Owned(plugin, record) for record in records]

    def profiles(self) -> dict[str, Owned[EnvProfile]]:
        """Env name -> its profile; raises PluginError on any clash of env or canonical repo."""
        if self._profiles is not None:
            return self._profiles
        by_env: dict[str, Owned[EnvProfile]] = {}
        by_repo: dict[str, Owned[EnvProfile]] = {}
        for owned in self._collect("openenv_release_envs", EnvProfile):
            env = owned.record.env
            if env in by_env:
                raise PluginError(
                    f"env {env} is claimed by two plugins: {by_env[env].plugin} and {owned.plugin}",
                    remedy=f"disable one with {DISABLE_VAR}",
                )
            by_env[env] = owned
            for target in owned.record.targets:
                if target.repo in by_repo:
                    other = by_repo[target.repo]
                    raise PluginError(
                        f"canonical repo {target.repo} is claimed by {other.record.env} "
                        f"({other.plugin}) and {env} ({owned.plugin})",
                        remedy="give each canonical Space to exactly one env",
                    )
                by_repo[target.repo] = owned
        self._profiles = dict(sorted(by_env.items()))
        return self._profiles

    def profile(self, env: str) -> EnvProfile:
        owned = self.profiles().get(env)
        return owned.record if owned else EnvProfile(env)

    def targets(self, env: str) -> tuple[CanonicalTarget, ...]:
        """The canonical targets ``env``'s plugin declares; () for any env no plugin claims."""
        owned = self.profiles().get(env)
        return owned.record.targets if owned else ()

    def plugin_for(self, env: str) -> str | None:
        owned = self.profiles().get(env)
        return owned.plugin if owned else None

    def fixes(self, env: str) -> list[Owned[Fix]]:
        """``env``'s fixes in order: its own plugin's, and every cross-cutting plugin's (those
        implemented without ``env``); a fix from a plugin that does not claim it is an error."""
        out: list[Owned[Fix]] = []
        for impl, found in self._calls("openenv_release_fixes", Fix, env=env):
            if found and "env" in impl.argnames:
                self._owns(impl.plugin_name, env, "fix", found[0].record.name)
            out += found
        return out

    def probes(self, env: str) -> list[Owned[Probe]]:
        """``env``'s probes, all from the plugin that claims it; step probes from two plugins,
        or a probe from a plugin that does not claim ``env``, are errors."""
        found = self._collect("openenv_release_probes", Probe, env=env)
        stepping = list(dict.fromkeys(o.plugin for o in found if o.record.path == "/step"))
        if len(stepping) > 1:
            raise PluginError(
                f"env {env} gets a step probe from two plugins: {stepping[0]} and {stepping[1]}",
                remedy=f"keep the probe in the plugin that claims {env}",
            )
        for owned in found:
            self._owns(owned.plugin, env, "probe", owned.record.name)
        return found

    def _owns(self, plugin: str, env: str, what: str, name: str) -> None:
        """PluginError unless ``plugin`` claims ``env``."""
        claimant = self.plugin_for(env)
        if claimant == plugin:
            return
        held = f"{claimant} claims it" if claimant else "no plugin claims it"
        raise PluginError(
            f"plugin {plugin} returned {what} {name} for env {env}, which it does not claim "
            f"({held})",
            remedy=f"claim {env} in {plugin}'s openenv_release_envs, or move the {what} to "
            f"{claimant or 'a plugin that claims it'}"
            + ("; a cross-cutting fix takes no env parameter" if what == "fix" else ""),
        )

    def allowed_secrets(self, env: str) -> list[Owned[AllowedSecret]]:
        """``env``'s known false positives, all from the plugin that claims it, each a path
        pattern inside ``envs/<env>/``; any other is an error naming the plugin and env."""
        found = self._collect("openenv_release_allowed_secrets", AllowedSecret, env=env)
        folder = f"envs/{env}/"
        for owned in found:
            path = owned.record.path
            self._owns(owned.plugin, env, "allowed secret", path)
            if not path.startswith(folder) or any(c in folder for c in "*?["):
                raise PluginError(
                    f"plugin {owned.plugin} allows secret {path} for env {env}, a path outside "
                    f"{folder}",
                    remedy=f"give a file or pattern under {folder} (an env allows only its own "
                    "files)",
                )
        return found

    def checks(self) -> list[Owned[Check]]:
        """Every plugin's static checks; a name defined twice is an error."""
        return named_once("check", self._collect("openenv_release_checks", Check))

    def signatures(self) -> list[Owned[Signature]]:
        """Every plugin's runtime-error signatures; a name defined twice is an error."""
        return named_once("signature", self._collect("openenv_release_signatures", Signature))

    def describe(self) -> list[dict[str, object]]:
        """One row per plugin: the envs it owns, its fixes (``env:name``, ``*:name`` for a
        cross-cutting one), probes, checks, targets, needs."""
        rows: dict[str, dict[str, list[str]]] = {
            name: {"envs": [], "fixes": [], "probes": [], "checks": [], "targets": [], "needs": []}
            for name, _ in self.pm.list_name_plugin()
        }
        for env, owned in self.profiles().items():
            rows[owned.plugin]["envs"].append(env)
            rows[owned.plugin]["targets"] += [t.repo for t in owned.record.targets]
            rows[owned.plugin]["needs"] += [f"{env}: {n}" for n in owned.record.needs]
            for fix in self.fixes(env):
                where = env if fix.plugin == owned.plugin else "*"  # "*": cross-cutting
                if f"{where}:{fix.record.name}" not in rows[fix.plugin]["fixes"]:
                    rows[fix.plugin]["fixes"].append(f"{where}:{fix.record.name}")
            for probe in self.probes(env):
                rows[probe.plugin]["probes"].append(f"{env}:{probe.record.name}")
            self.allowed_secrets(env)  # checked like fixes and probes
        for check in self.checks():
            rows[check.plugin]["checks"].append(check.record.name)
        return [{"plugin": name, **row} for name, row in rows.items()]
