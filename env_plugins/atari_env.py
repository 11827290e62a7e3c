"""atari_env: its canonical Space has the env's own name (openenv/atari_env)."""

from releaselib.hookspecs import hookimpl
from releaselib.records import CanonicalTarget, EnvProfile


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile("atari_env", targets=(CanonicalTarget("atari_env"),)),)
