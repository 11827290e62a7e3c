"""Give an embedded Hub what a real namespace has before a release: its canonical Spaces.

Seeding talks to the Hub through the ordinary client, like any task, so it refuses an endpoint
that is not on this machine: it must never create Spaces on huggingface.co.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from releaselib.errors import UsageError
from releaselib.hub.client import Hub
from releaselib.plugins import PluginRegistry
from releaselib.publish.canonical_targets import Target, canonical_targets

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True)
class Seeded:
    """One canonical Space: whether seeding created it or found it."""

    space_id: str
    created: bool


def check_local(endpoint: str | None) -> str:
    """``endpoint`` if it is an embedded Hub on this machine, else UsageError."""
    if not endpoint or urlsplit(endpoint).hostname not in LOCAL_HOSTS:
        raise UsageError(
            f"seeding only talks to an embedded Hub on this machine, not {endpoint or 'the Hub'}",
            remedy='eval "$(cat hub.env)" from localhub.serve --print-env, or pass --hub-endpoint',
        )
    return endpoint


def named_targets(
    registry: PluginRegistry, namespace: str, envs: Sequence[str] = ()
) -> list[Target]:
    """The canonical targets of ``envs`` (their plugins', else ``<namespace>/<env>``), or, with
    no envs, every target a plugin names."""
    if envs:
        return [t for env in envs for t in canonical_targets(registry, env, namespace, ())]
    return [
        t
        for env, owned in registry.profiles().items()
        if owned.record.targets
        for t in canonical_targets(registry, env, namespace, ())
    ]


def seed_canonicals(hub: Hub, targets: Iterable[Target]) -> list[Seeded]:
    """Create each target as a public Space (with its variables) unless it exists."""
    seeded = []
    for target in targets:
        existed = hub.space(target.space_id) is not None
        hub.create_space(target.space_id, private=False)
        for key, value in target.variables:
            hub.set_variable(target.space_id, key, value)
        seeded.append(Seeded(target.space_id, not existed))
    return seeded
