"""kernrl: needs an NVIDIA GPU with the CUDA toolkit (a T4 Space)."""

from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile("kernrl", hardware="t4-small"),)
