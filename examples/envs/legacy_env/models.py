"""Legacy env's action (an enum and a nested model) and observation."""

from enum import StrEnum

from openenv.core.env_server.types import Action, Observation
from pydantic import BaseModel


class Move(StrEnum):
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
