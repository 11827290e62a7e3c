"""agent_world_model_env: an MCP env that serves episodes over /ws only (its HTTP reset and step
answer 400); its action schema is a union the schema-derived step cannot fill, so the step
lists the tools."""

from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile, Probe

ENV = "agent_world_model_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile(ENV, note="its LLM key (OPENENV_AWM_LLM_API_KEY) is optional"),)


@hookimpl
def openenv_release_probes(env: str) -> tuple[Probe, ...]:
    if env != ENV:
        return ()
    step = {"action": {"type": "list_tools"}}
    return (Probe("step", "POST", "/step", step),)
