"""Broken env's action and observation."""

from openenv.core.env_server.types import Action, Observation


class BrokenAction(Action):
    value: int = 0


class BrokenObservation(Observation):
    value: int = 0
