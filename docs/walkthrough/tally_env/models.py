"""Tally's action and observation."""

from openenv.core.env_server.types import Action, Observation
from pydantic import field_validator


class TallyAction(Action):
    amount: int

    @field_validator("amount")
    @classmethod
    def moves(cls, amount: int) -> int:
        if amount == 0:
            raise ValueError("a tally step must add a non-zero amount")
        return amount


class TallyObservation(Observation):
    total: int = 0
