"""maze_env: PYTHONPATH `/app/env/src/core:/app/env/src:/app/env` over a staged src/core."""

from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile

from env_plugins._common import legacy_pythonpath

ENV = "maze_env"


@hookimpl
def openenv_release_envs():
    return (EnvProfile(ENV),)


@hookimpl
def openenv_release_fixes(env):
    return (legacy_pythonpath("/app/env/src/core:/app/env/src:/app/env"),) if env == ENV else ()
