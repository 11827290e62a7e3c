"""An env that keeps named running totals."""

from uuid import uuid4

from models import TallyAction, TallyObservation
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import State


class TallyEnvironment(Environment):
    def __init__(self) -> None:
        self._state = State(episode_id=str(uuid4()), step_count=0)
        self._totals: dict[str, int] = {}

    def reset(self, seed=None, episode_id=None, **kwargs) -> TallyObservation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        self._totals = {}
        return TallyObservation(totals={}, reward=0.0, done=False)

    def step(self, action: TallyAction, timeout_s=None, **kwargs) -> TallyObservation:
        self._state.step_count += 1
        self._totals[action.counter] = self._totals.get(action.counter, 0) + action.amount
        return TallyObservation(totals=dict(self._totals), reward=1.0, done=False)

    @property
    def state(self) -> State:
        return self._state
