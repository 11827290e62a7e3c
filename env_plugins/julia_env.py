"""julia_env: its build installs Julia with juliaup from julialang.org."""

from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile

ENV = "julia_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile(ENV, services=("Julia from install.julialang.org at build time",)),)
