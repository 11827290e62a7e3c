"""An env whose reset fails, as chat_env-0.2.2 and tbench2_env-0.2.2 did in a real sweep."""

from models import BrokenAction, BrokenObservation
from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import State


class BrokenEnvironment(Environment):
    def reset(self, seed=None, episode_id=None, **kwargs) -> BrokenObservation:
        raise RuntimeError("dataset missing: reset cannot build an episode")

    def step(self, action: BrokenAction, timeout_s=None, **kwargs) -> BrokenObservation:
        return BrokenObservation(value=action.value, reward=0.0, done=False)

    @property
    def state(self) -> State:
        return State(episode_id="broken", step_count=0)


app = create_app(BrokenEnvironment, BrokenAction, BrokenObservation, env_name="broken_env")
