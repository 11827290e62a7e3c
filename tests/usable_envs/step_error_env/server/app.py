"""An env that knows a few commands and answers any other with an error observation."""

from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

COMMANDS = ("look", "wait")


class CommandAction(Action):
    command: str


class CommandObservation(Observation):
    said: str = ""
    error: str | None = None


class StepErrorEnvironment(Environment):
    def reset(self, seed=None, episode_id=None, **kwargs) -> CommandObservation:
        return CommandObservation(said="ready")

    def step(self, action: CommandAction, timeout_s=None, **kwargs) -> CommandObservation:
        if action.command not in COMMANDS:
            return CommandObservation(error=f"unknown command {action.command!r}")
        return CommandObservation(said=f"you {action.command}", reward=1.0)

    @property
    def state(self) -> State:
        return State(episode_id="x", step_count=0)


app = create_app(StepErrorEnvironment, CommandAction, CommandObservation, env_name="step_error_env")
