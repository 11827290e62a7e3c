"""git_env: slow to reset, so its probes get a longer timeout; it needs a Gitea server. Its
README logs in to the local Gitea with that server's documented default (``gitea:gitea123``), a
known false positive of the secret scan."""

from releaselib.hookspecs import hookimpl
from releaselib.records import AllowedSecret, EnvProfile

ENV = "git_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile(ENV, probe_timeout=120.0, services=("a Gitea server (GITEA_URL)",)),)


@hookimpl
def openenv_release_allowed_secrets(env: str) -> tuple[AllowedSecret, ...]:
    if env != ENV:
        return ()
    return (
        AllowedSecret(
            f"envs/{ENV}/README.md",
            why="the local Gitea's documented default login in a curl example",
            kind="betterleaks.curl-auth-user",
            # sha256 of "gitea:gitea123", the default login of the dev Gitea server
            sha256="9ab7d0d36dde08e753de90547073f192ca249cbf623e09e73dfaee18f9f4af8d",
        ),
    )
