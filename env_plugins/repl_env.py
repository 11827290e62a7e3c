"""repl_env: its canonical Space is openenv/repl."""

from releaselib.hookspecs import hookimpl
from releaselib.records import CanonicalTarget, EnvProfile


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile("repl_env", targets=(CanonicalTarget("repl"),)),)
