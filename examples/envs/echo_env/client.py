"""Client for the echo example env."""

from openenv.core.env_client import EnvClient


class EchoEnv(EnvClient):
    """Talks to an echo Space."""
