"""sumo_rl_env: its canonical Space has the env's own name (openenv/sumo_rl_env); its build
installs SUMO from apt."""

from releaselib.hookspecs import hookimpl
from releaselib.records import CanonicalTarget, EnvProfile

ENV = "sumo_rl_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (
        EnvProfile(
            ENV,
            targets=(CanonicalTarget(ENV),),
            services=("SUMO from apt (sumo, sumo-tools) at build time",),
        ),
    )
