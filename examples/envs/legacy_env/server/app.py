"""A healthy env whose Dockerfile still uses the pre-0.2 layout (COPY src/core/)."""

from models import LegacyAction, LegacyObservation, Move
from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import State


class LegacyEnvironment(Environment):
    def reset(self, seed=None, episode_id=None, **kwargs) -> LegacyObservation:
        return LegacyObservation(position=0, reward=0.0, done=False)

    def step(self, action: LegacyAction, timeout_s=None, **kwargs) -> LegacyObservation:
        delta = 1 if action.move is Move.RIGHT else -1
        return LegacyObservation(position=delta + action.target.x, reward=0.0, done=False)

    @property
    def state(self) -> State:
        return State(episode_id="legacy", step_count=0)


app = create_app(LegacyEnvironment, LegacyAction, LegacyObservation, env_name="legacy_env")
