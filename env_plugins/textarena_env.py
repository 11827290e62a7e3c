"""textarena_env: promotes into the productized canonicals sudoku and wordle, each with its game;
its games download NLTK data when they start."""

from releaselib.hookspecs import hookimpl
from releaselib.records import CanonicalTarget, EnvProfile

ENV = "textarena_env"


@hookimpl
def openenv_release_envs() -> tuple[EnvProfile, ...]:
    return (
        EnvProfile(
            ENV,
            targets=(
                CanonicalTarget("sudoku", (("TEXTARENA_ENV_ID", "Sudoku-v0"),)),
                CanonicalTarget("wordle", (("TEXTARENA_ENV_ID", "Wordle-v0"),)),
            ),
            services=("NLTK data (words, a tagger) from raw.githubusercontent.com at run time",),
            note="never promote into openenv/textarena_env",
        ),
    )
