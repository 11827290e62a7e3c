"""unity_env: slow to reset (downloads Unity binaries at run time, amd64 only)."""

from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile

ENV = "unity_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (
        EnvProfile(
            ENV,
            probe_timeout=180.0,
            services=("Unity binaries downloaded at run time (amd64 only)",),
        ),
    )
