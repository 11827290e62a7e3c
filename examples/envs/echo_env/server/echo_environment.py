"""An env that echoes the message it is sent."""

from uuid import uuid4

from models import EchoAction, EchoObservation
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import State


class EchoEnvironment(Environment):
    def __init__(self) -> None:
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(self, seed=None, episode_id=None, **kwargs) -> EchoObservation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return EchoObservation(echoed="", reward=0.0, done=False)

    def step(self, action: EchoAction, timeout_s=None, **kwargs) -> EchoObservation:
        self._state.step_count += 1
        return EchoObservation(echoed=action.message, reward=1.0, done=False)

    @property
    def state(self) -> State:
        return self._state
