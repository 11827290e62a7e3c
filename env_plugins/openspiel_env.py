"""openspiel_env: builds on its own OpenSpiel base image, made literal in FROM."""

from releaselib.hookspecs import hookimpl
from releaselib.records import CanonicalTarget, EnvProfile

from env_plugins._common import literal_from

ENV = "openspiel_env"


@hookimpl
def openenv_release_envs():
    return (EnvProfile(ENV, targets=(CanonicalTarget(ENV),)),)


@hookimpl
def openenv_release_fixes(env):
    return (literal_from("OPENSPIEL_BASE_IMAGE"),) if env == ENV else ()
