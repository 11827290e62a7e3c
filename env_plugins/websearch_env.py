"""websearch_env: git in the builder before uv sync; needs SERPER_API_KEY."""

from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile

from env_plugins._common import git_before_uv_sync

ENV = "websearch_env"


@hookimpl
def openenv_release_envs():
    return (EnvProfile(ENV, secrets=("SERPER_API_KEY",)),)


@hookimpl
def openenv_release_fixes(env):
    return (git_before_uv_sync(),) if env == ENV else ()
