"""calendar_env: drop client_notebooks/ (its tunnel notes trip the Hub's content filters); its
seed data holds a made-up Slack webhook URL, a known false positive of the secret scan.

Its DEFAULT_AUTH_TOKEN is optional, so it is no declared need."""

from env_plugins._common import drop_dirs
from releaselib.hookspecs import hookimpl
from releaselib.records import AllowedSecret, EnvProfile, Fix, Probe

ENV = "calendar_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (
        EnvProfile(ENV, note="custom FastAPI app on port 8004; DEFAULT_AUTH_TOKEN is optional"),
    )


@hookimpl
def openenv_release_fixes(env: str) -> tuple[Fix, ...]:
    if env != ENV:
        return ()
    return (drop_dirs(ENV, "client_notebooks"),)


@hookimpl
def openenv_release_allowed_secrets(env: str) -> tuple[AllowedSecret, ...]:
    if env != ENV:
        return ()
    return (
        AllowedSecret(
            f"envs/{ENV}/server/data/watch_channel_seed_data.py",
            why="seed data: a made-up Slack webhook (hooks.slack.com/services/T123/B456/...)",
            kind="Slack Token",
            # sha256 of "https://hooks.slack.com/services/T123/B456/dev", the made-up value
            sha256="4dfcf8c9b5049c2e7ce292095ebd680de1bb9000a464ce6bbf32e7a081568dcb",
        ),
    )


@hookimpl
def openenv_release_probes(env: str) -> tuple[Probe, ...]:
    if env != ENV:
        return ()
    # its custom server has no /schema to derive a step from; listing the MCP tools is a step
    step = {"action": {"action_type": "ListToolsAction"}}
    return (Probe("step", "POST", "/step", step),)
