"""The echo example's FastAPI app."""

from models import EchoAction, EchoObservation
from openenv.core.env_server import create_app
from server.echo_environment import EchoEnvironment

app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo_env")
