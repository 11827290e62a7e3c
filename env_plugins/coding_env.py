"""coding_env: its canonical Space has the env's own name (openenv/coding_env)."""

from releaselib.hookspecs import hookimpl
from releaselib.records import CanonicalTarget, EnvProfile

ENV = "coding_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile(ENV, targets=(CanonicalTarget(ENV),)),)
