"""TextArena-like action and observation."""

from openenv.core.env_server.types import Action, Observation


class TextArenaAction(Action):
    message: str


class TextArenaObservation(Observation):
    game: str = ""
    prompt: str = ""
