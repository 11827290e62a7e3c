"""Slow env's action and observation."""

from openenv.core.env_server.types import Action, Observation


class SlowAction(Action):
    steps: int = 1


class SlowObservation(Observation):
    elapsed: float = 0.0
