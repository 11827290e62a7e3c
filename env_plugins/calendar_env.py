"""calendar_env: drop client_notebooks/ (its tunnel notes trip the Hub's content filters).

Its DEFAULT_AUTH_TOKEN is optional, so it is no declared need."""

from env_plugins._common import drop_dirs
from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile, Fix

ENV = "calendar_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (
        EnvProfile(ENV, note="custom FastAPI app on port 8004; DEFAULT_AUTH_TOKEN is optional"),
    )


@hookimpl
def openenv_release_fixes(env: str) -> tuple[Fix, ...]:
    return (drop_dirs(ENV, "client_notebooks"),) if env == ENV else ()
