"""sumo_rl_env: its canonical Space has the env's own name (openenv/sumo_rl_env); its build
installs SUMO from apt."""

from releaselib.hookspecs import hookimpl
from releaselib.records import CanonicalTarget, EnvProfile


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (
        EnvProfile(
            "sumo_rl_env",
            targets=(CanonicalTarget("sumo_rl_env"),),
            services=("SUMO from apt (sumo, sumo-tools) at build time",),
        ),
    )
