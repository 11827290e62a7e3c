"""Client for the TextArena-like example."""

from openenv.core.env_client import EnvClient


class TextArenaEnv(EnvClient):
    """Talks to a TextArena Space (sudoku, wordle, ...)."""
