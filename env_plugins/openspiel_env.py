"""openspiel_env: builds on its own OpenSpiel base image, made literal in FROM; JSON-form CMD."""

from env_plugins._common import json_form_cmd, literal_from
from releaselib.hookspecs import hookimpl
from releaselib.records import CanonicalTarget, EnvProfile, Fix

ENV = "openspiel_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (
        EnvProfile(
            ENV,
            targets=(CanonicalTarget(ENV),),
            services=("OpenSpiel built from source in its base image",),
        ),
    )


@hookimpl
def openenv_release_fixes(env: str) -> tuple[Fix, ...]:
    if env != ENV:
        return ()
    return (literal_from("OPENSPIEL_BASE_IMAGE"), json_form_cmd())
