"""git_env: slow to reset, so its probes get a longer timeout; it needs a Gitea server."""

from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile

ENV = "git_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile(ENV, probe_timeout=120.0, services=("a Gitea server (GITEA_URL)",)),)
