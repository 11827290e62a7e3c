"""tbench2_env: its canonical Space is openenv/tbench2."""

from releaselib.hookspecs import hookimpl
from releaselib.records import CanonicalTarget, EnvProfile


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile("tbench2_env", targets=(CanonicalTarget("tbench2"),)),)
