"""Tally's FastAPI app; the Dockerfile's CMD serves it as ``tally_server:app``."""

from models import TallyAction, TallyObservation
from openenv.core.env_server import create_app
from tally_environment import TallyEnvironment

app = create_app(TallyEnvironment, TallyAction, TallyObservation, env_name="tally_env")
