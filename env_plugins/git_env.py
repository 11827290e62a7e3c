"""git_env: slow to reset; give its probes a longer timeout."""

from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile("git_env", probe_timeout=120.0),)
