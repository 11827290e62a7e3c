"""repl_env: its canonical Space is openenv/repl; its HF_TOKEN is optional, so no declared need."""

from releaselib.hookspecs import hookimpl
from releaselib.records import CanonicalTarget, EnvProfile

ENV = "repl_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (
        EnvProfile(
            ENV,
            targets=(CanonicalTarget("repl"),),
            note="HF_TOKEN is optional (hosted inference)",
        ),
    )
