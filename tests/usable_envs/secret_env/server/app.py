"""An env that needs the secret TOOLS_API_KEY and says so when the Space lacks it."""

import os

from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State


class AskAction(Action):
    question: str = ""


class AskObservation(Observation):
    answer: str = ""
    error: str | None = None


def missing() -> str | None:
    """What the env lacks; MISSING_MESSAGE (a Space variable) says it in other words."""
    said = os.environ.get("MISSING_MESSAGE", "TOOLS_API_KEY is not set")
    return None if os.environ.get("TOOLS_API_KEY") else said


class SecretEnvironment(Environment):
    def reset(self, seed=None, episode_id=None, **kwargs) -> AskObservation:
        error = missing()
        return AskObservation(done=error is not None, error=error)

    def step(self, action: AskAction, timeout_s=None, **kwargs) -> AskObservation:
        return AskObservation(answer="42", error=missing())

    @property
    def state(self) -> State:
        return State(episode_id="x", step_count=0)


app = create_app(SecretEnvironment, AskAction, AskObservation, env_name="secret_env")
