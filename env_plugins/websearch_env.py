"""websearch_env: git in the builder before uv sync; needs SERPER_API_KEY."""

from env_plugins._common import git_before_uv_sync
from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile, Fix

ENV = "websearch_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile(ENV, secrets=("SERPER_API_KEY",)),)


@hookimpl
def openenv_release_fixes(env: str) -> tuple[Fix, ...]:
    return (git_before_uv_sync(),) if env == ENV else ()
