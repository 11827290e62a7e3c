"""wildfire_env: its shell-form CMD (``--port ${PORT:-8000}``) becomes JSON form via sh -c."""

from env_plugins._common import json_form_cmd
from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile, Fix, Probe

ENV = "wildfire_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile(ENV),)


@hookimpl
def openenv_release_fixes(env: str) -> tuple[Fix, ...]:
    if env != ENV:
        return ()
    return (json_form_cmd(),)


@hookimpl
def openenv_release_probes(env: str) -> tuple[Probe, ...]:
    if env != ENV:
        return ()
    # Schema-derived step bodies fail here: its action is a free string the env checks
    # (break/water/wait): a schema-derived "" fails in the env.
    return (Probe("step", "POST", "/step", {"action": {"action": "wait"}}),)
