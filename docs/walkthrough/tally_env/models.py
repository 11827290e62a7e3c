"""Tally's action and observation."""

from openenv.core.env_server.types import Action, Observation
from pydantic import Field


class TallyAction(Action):
    counter: str = Field(pattern="^[a-z]+$", description="which tally: lower-case letters")
    amount: int = 1


class TallyObservation(Observation):
    totals: dict[str, int] = Field(default_factory=dict)
