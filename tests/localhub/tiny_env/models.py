"""Action and observation of the counter env."""

from openenv.core.env_server.types import Action, Observation


class CountAction(Action):
    """Add ``amount`` to the counter."""

    amount: int


class CountObservation(Observation):
    """The counter after the last action."""

    total: int = 0
