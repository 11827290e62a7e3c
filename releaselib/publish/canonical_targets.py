"""Which canonical Spaces an env promotes into, and the rule that two envs never share one.

The targets come from the env's plugin profile (``repl_env`` -> ``<ns>/repl``,
``textarena_env`` -> ``<ns>/sudoku`` and ``<ns>/wordle`` with their ``TEXTARENA_ENV_ID``), else
they are the unsuffixed Space named like the env. A plugin's alias is never second-guessed
from the env directory; instead two envs whose targets meet (an env folder ``sudoku`` beside
``textarena_env``) are named by :func:`shared_targets`, and promote holds both.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from releaselib.plugins import PluginRegistry
from releaselib.space_ids import CanonicalId


@dataclass(frozen=True)
class Target:
    """One canonical Space of an env, as the namespace's listing showed it."""

    space_id: CanonicalId
    variables: tuple[tuple[str, str], ...] = ()
    exists: bool = True


def canonical_targets(
    registry: PluginRegistry, env: str, namespace: str, listing: Collection[str]
) -> tuple[Target, ...]:
    """The env's canonical Spaces: its plugin's targets, else the Space named like the env."""
    declared = registry.profile(env).targets
    if declared:
        ids = [(CanonicalId.of(namespace, t.repo), t.variables) for t in declared]
        return tuple(Target(i, variables, i in listing) for i, variables in ids)
    own = CanonicalId.of(namespace, env)
    return (Target(own, (), own in listing),)


def shared_targets(
    registry: PluginRegistry, envs: Collection[str], namespace: str
) -> dict[str, tuple[str, ...]]:
    """The canonical Spaces that more than one of ``envs`` targets (target -> those envs, in
    order): an env folder named like another env's alias (``sudoku`` beside ``textarena_env``).
    Promote holds every env of such a target, since either would overwrite the other."""
    claims: dict[str, list[str]] = {}
    for env in envs:
        for target in canonical_targets(registry, env, namespace, ()):
            claims.setdefault(target.space_id, []).append(env)
    return {t: tuple(owners) for t, owners in claims.items() if len(owners) > 1}
