"""Echo's action and observation."""

from openenv.core.env_server.types import Action, Observation


class EchoAction(Action):
    message: str


class EchoObservation(Observation):
    echoed: str = ""
