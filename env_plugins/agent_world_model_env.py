"""agent_world_model_env: an MCP env that serves episodes over /ws only (its HTTP reset and step
answer 400); its action schema is a union with CallToolAction, so the verifier lists the tools
over /ws and calls one with valid arguments (no step probe of its own)."""

from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile

ENV = "agent_world_model_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (EnvProfile(ENV, note="its LLM key (OPENENV_AWM_LLM_API_KEY) is optional"),)
