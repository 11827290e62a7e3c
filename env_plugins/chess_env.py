"""chess_env: probe with a legal first move."""

from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile, Probe

ENV = "chess_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile(ENV),)


@hookimpl
def openenv_release_probes(env: str) -> tuple[Probe, ...]:
    if env != ENV:
        return ()
    # Schema-derived step bodies fail here: a move must be legal UCI; a schema-derived "" fails in
    # the env.
    return (Probe("step", "POST", "/step", {"action": {"move": "e2e4"}}),)
