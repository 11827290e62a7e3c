"""kernrl: needs an NVIDIA GPU with the CUDA toolkit (a T4 Space)."""

from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile

ENV = "kernrl"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile(ENV, hardware="t4-small"),)
