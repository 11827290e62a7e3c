"""dm_control_env: MuJoCo renders through OpenGL libraries its Dockerfile installs with apt."""

from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile

ENV = "dm_control_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (
        EnvProfile(
            ENV,
            services=("OpenGL libraries (libgl1, libglew, libglfw3) from apt at build time",),
        ),
    )
