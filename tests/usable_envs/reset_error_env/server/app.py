"""An env whose first reset is done, with an error in its fields (the env's own bug)."""

from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State


class PickAction(Action):
    choice: int = 0


class PickObservation(Observation):
    message: str = ""


class ResetErrorEnvironment(Environment):
    def reset(self, seed=None, episode_id=None, **kwargs) -> PickObservation:
        return PickObservation(done=True, message="Parameter 'scenario' is required")

    def step(self, action, timeout_s=None, **kwargs) -> PickObservation:
        return PickObservation(done=True, message="Parameter 'scenario' is required")

    @property
    def state(self) -> State:
        return State(episode_id="x", step_count=0)


app = create_app(ResetErrorEnvironment, PickAction, PickObservation, env_name="reset_error_env")
