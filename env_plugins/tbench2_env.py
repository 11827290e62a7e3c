"""tbench2_env: its canonical Space is openenv/tbench2; it downloads its tasks at run time."""

from releaselib.hookspecs import hookimpl
from releaselib.records import CanonicalTarget, EnvProfile

ENV = "tbench2_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (
        EnvProfile(
            ENV,
            targets=(CanonicalTarget("tbench2"),),
            services=("the Terminal-Bench-2 tasks from GitHub at run time",),
        ),
    )
