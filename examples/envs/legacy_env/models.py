"""Legacy env's action (an enum and a nested model) and observation."""

from enum import Enum

from pydantic import BaseModel

from openenv.core.env_server.types import Action, Observation


class Move(str, Enum):
    LEFT = "left"
    RIGHT = "right"


class Target(BaseModel):
    x: int
    y: int = 0


class LegacyAction(Action):
    move: Move
    target: Target


class LegacyObservation(Observation):
    position: int = 0
