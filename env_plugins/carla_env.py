"""carla_env: needs a GPU Space (T4 or better); its build downloads about 10 GB."""

from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile

ENV = "carla_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (
        EnvProfile(
            ENV,
            hardware="t4-medium",
            probe_timeout=120.0,
            services=("the CARLA simulator (about 10 GB from carla.org) at build time",),
        ),
    )
