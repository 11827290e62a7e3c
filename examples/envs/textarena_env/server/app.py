"""Serves the game named by TEXTARENA_ENV_ID (Sudoku-v0, Wordle-v0, ...)."""

import os

from models import TextArenaAction, TextArenaObservation
from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import State

GAME = os.environ.get("TEXTARENA_ENV_ID", "Wordle-v0")


class TextArenaEnvironment(Environment):
    def reset(self, seed=None, episode_id=None, **kwargs) -> TextArenaObservation:
        return TextArenaObservation(game=GAME, prompt=f"Welcome to {GAME}", reward=0.0, done=False)

    def step(self, action: TextArenaAction, timeout_s=None, **kwargs) -> TextArenaObservation:
        return TextArenaObservation(game=GAME, prompt=action.message, reward=0.0, done=False)

    @property
    def state(self) -> State:
        return State(episode_id=GAME, step_count=0)


app = create_app(
    TextArenaEnvironment, TextArenaAction, TextArenaObservation, env_name="textarena_env"
)
