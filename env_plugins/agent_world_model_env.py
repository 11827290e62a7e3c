"""agent_world_model_env: an MCP env that serves episodes over /ws only (its HTTP reset and step
answer 400); its action schema is a union with CallToolAction, so the verifier lists the tools
over /ws and calls one with valid arguments (no step probe of its own).

A reset without a scenario answers ``error: Parameter 'scenario' is required``, so the reset
names the README's own example scenario; the scenarios come from a dataset on huggingface.co,
downloaded at the first reset."""

from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile, Probe

ENV = "agent_world_model_env"
SCENARIO = {"scenario": "e_commerce_33", "task_idx": 0}  # the README's example


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (
        EnvProfile(
            ENV,
            services=("the Snowflake/AgentWorldModel-1K dataset from huggingface.co at run time",),
            note="its LLM key (OPENENV_AWM_LLM_API_KEY) is optional",
        ),
    )


@hookimpl
def openenv_release_probes(env: str) -> tuple[Probe, ...]:
    if env != ENV:
        return ()
    return (Probe("reset with the README's scenario", "POST", "/reset", SCENARIO),)
