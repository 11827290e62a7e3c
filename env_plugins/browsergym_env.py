"""browsergym_env: a pinned MiniWoB++ tarball instead of a build-time git clone; its build
downloads MiniWoB++ and Chromium."""

from env_plugins._common import tarball_instead_of_clone
from releaselib.hookspecs import hookimpl
from releaselib.records import CanonicalTarget, EnvProfile, Fix, Probe

ENV = "browsergym_env"
MINIWOB = "https://github.com/Farama-Foundation/miniwob-plusplus.git"
MINIWOB_COMMIT = "7fd85d71a4b60325c6585396ec4f48377d049838"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (
        EnvProfile(
            ENV,
            targets=(CanonicalTarget(ENV),),
            services=("MiniWoB++ from GitHub and Chromium from Playwright at build time",),
        ),
    )


@hookimpl
def openenv_release_fixes(env: str) -> tuple[Fix, ...]:
    if env != ENV:
        return ()
    return (tarball_instead_of_clone(MINIWOB, MINIWOB_COMMIT, "/app/miniwob-plusplus"),)


@hookimpl
def openenv_release_probes(env: str) -> tuple[Probe, ...]:
    if env != ENV:
        return ()
    # Schema-derived step bodies fail here: action_str must be a BrowserGym action; noop() is always
    # valid.
    return (Probe("step", "POST", "/step", {"action": {"action_str": "noop()"}}),)
