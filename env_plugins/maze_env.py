"""maze_env: PYTHONPATH `/app/env/src/core:/app/env/src:/app/env` over a staged src/core."""

from env_plugins._common import legacy_pythonpath
from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile, Fix

ENV = "maze_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile(ENV),)


@hookimpl
def openenv_release_fixes(env: str) -> tuple[Fix, ...]:
    if env != ENV:
        return ()
    return (legacy_pythonpath("/app/env/src/core:/app/env/src:/app/env"),)
