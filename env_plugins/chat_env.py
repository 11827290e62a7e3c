"""chat_env: its canonical Space has the env's own name (openenv/chat_env); its build downloads
the GPT-2 tokenizer."""

from releaselib.hookspecs import hookimpl
from releaselib.records import CanonicalTarget, EnvProfile, Probe

ENV = "chat_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (
        EnvProfile(
            ENV,
            targets=(CanonicalTarget(ENV),),
            services=("the GPT-2 tokenizer from huggingface.co at build time",),
        ),
    )


@hookimpl
def openenv_release_probes(env: str) -> tuple[Probe, ...]:
    if env != ENV:
        return ()
    # Schema-derived step bodies fail here: tokens must be a non-empty list of token ids.
    return (Probe("step", "POST", "/step", {"action": {"tokens": [15496]}}),)
