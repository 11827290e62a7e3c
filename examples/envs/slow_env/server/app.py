"""An env slow to reset (like git_env or unity_env), so a short probe is inconclusive."""

import os
import time

from models import SlowAction, SlowObservation
from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import State

RESET_SECONDS = float(os.environ.get("SLOW_ENV_RESET_SECONDS", "20"))


class SlowEnvironment(Environment):
    def reset(self, seed=None, episode_id=None, **kwargs) -> SlowObservation:
        time.sleep(RESET_SECONDS)
        return SlowObservation(elapsed=RESET_SECONDS, reward=0.0, done=False)

    def step(self, action: SlowAction, timeout_s=None, **kwargs) -> SlowObservation:
        return SlowObservation(elapsed=0.0, reward=0.0, done=False)

    @property
    def state(self) -> State:
        return State(episode_id="slow", step_count=0)


app = create_app(SlowEnvironment, SlowAction, SlowObservation, env_name="slow_env")
