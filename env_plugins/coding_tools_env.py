"""coding_tools_env: backed by E2B, so it needs E2B_API_KEY as a Space secret."""

from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile("coding_tools_env", secrets=("E2B_API_KEY",)),)
