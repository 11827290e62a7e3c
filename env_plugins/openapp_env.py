"""openapp_env: probe with a noop action; its build clones OpenApps and downloads Chromium."""

from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile, Probe

ENV = "openapp_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (
        EnvProfile(
            ENV,
            services=("OpenApps cloned from GitHub and Chromium from Playwright at build time",),
        ),
    )


@hookimpl
def openenv_release_probes(env: str) -> tuple[Probe, ...]:
    if env != ENV:
        return ()
    # Schema-derived step bodies fail here: action_type is a free string the env checks; noop is
    # always valid.
    return (Probe("step", "POST", "/step", {"action": {"action_type": "noop"}}),)
