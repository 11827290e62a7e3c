"""Echo: a healthy example env."""

from .client import EchoEnv
from .models import EchoAction, EchoObservation

__all__ = ["EchoAction", "EchoEnv", "EchoObservation"]
