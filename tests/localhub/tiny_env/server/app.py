"""A tiny OpenEnv server: a counter, served by openenv-core's ``create_app``."""

import os
from uuid import uuid4

from models import CountAction, CountObservation
from openenv.core.env_server import Environment, create_app
from openenv.core.env_server.types import State


class CounterEnvironment(Environment):
    """Counts up by the amount of each action; the reward is the new total."""

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=str(uuid4()), step_count=0)
        self._total = int(os.environ.get("COUNTER_START", "0"))

    def reset(self, seed=None, episode_id=None, **kwargs) -> CountObservation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return CountObservation(total=self._total, reward=0.0, done=False)

    def step(self, action: CountAction, timeout_s=None, **kwargs) -> CountObservation:
        self._state.step_count += 1
        self._total += action.amount
        return CountObservation(total=self._total, reward=float(self._total), done=False)

    @property
    def state(self) -> State:
        return self._state


app = create_app(CounterEnvironment, CountAction, CountObservation, env_name="counter_env")
