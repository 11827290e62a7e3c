"""A probe's verdict, and the exception that ends a probe early with one."""

from __future__ import annotations

import enum


class Outcome(enum.Enum):
    """The verdict on one server; the value is what gets printed."""

    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"


class Stop(Exception):
    """Ends a probe early with its verdict. ``episode``: it rests on the env's answer to
    ``POST /reset`` or ``POST /step`` (the ``/ws`` episode may still be tried); ``needs``: the
    declared needs the env reported missing."""

    def __init__(
        self,
        outcome: Outcome,
        reason: str,
        *,
        our_error: bool = False,
        episode: bool = False,
        needs: tuple[str, ...] = (),
    ) -> None:
        super().__init__(reason)
        self.outcome, self.reason, self.our_error = outcome, reason, our_error
        self.episode, self.needs = episode, needs
