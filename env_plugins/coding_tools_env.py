"""coding_tools_env: backed by E2B, so it needs E2B_API_KEY as a Space secret."""

from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile

ENV = "coding_tools_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile(ENV, secrets=("E2B_API_KEY",)),)
