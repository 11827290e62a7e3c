"""Tally: the env of the plugin walk-through."""

from .models import TallyAction, TallyObservation

__all__ = ["TallyAction", "TallyObservation"]
