"""finqa_env: its canonical Space has its own name; probe with a real tool call; its build
downloads its dataset."""

from releaselib.hookspecs import hookimpl
from releaselib.records import CanonicalTarget, EnvProfile, Probe

ENV = "finqa_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (
        EnvProfile(
            ENV,
            targets=(CanonicalTarget(ENV),),
            services=("the snorkelai/finqa-data dataset from huggingface.co at build time",),
        ),
    )


@hookimpl
def openenv_release_probes(env: str) -> tuple[Probe, ...]:
    if env != ENV:
        return ()
    # Schema-derived step bodies fail here: its MCP action class only accepts call_tool, so
    # list_tools answers 422.
    return (
        Probe(
            "step",
            "POST",
            "/step",
            {
                "action": {
                    "tool_name": "get_descriptions",
                    "arguments": {"company_name": "apple"},
                }
            },
        ),
    )
