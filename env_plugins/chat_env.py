"""chat_env: its canonical Space has the env's own name (openenv/chat_env)."""

from releaselib.hookspecs import hookimpl
from releaselib.records import CanonicalTarget, EnvProfile


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile("chat_env", targets=(CanonicalTarget("chat_env"),)),)
