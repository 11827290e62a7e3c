"""websearch_env: needs SERPER_API_KEY (git before uv sync is staging's generic fix now)."""

from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile

ENV = "websearch_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile(ENV, secrets=("SERPER_API_KEY",)),)
