"""TextArena-like: one env, several games; TEXTARENA_ENV_ID picks the game."""

from .client import TextArenaEnv

__all__ = ["TextArenaEnv"]
