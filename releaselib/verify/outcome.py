"""A probe's verdict, the exception that ends a probe early with one, and the rule for a module
missing under the embedded Hub's ``host`` builder."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable

#: A module missing: no evidence from a runtime that installed nothing. Other ImportErrors stay
#: evidence: a name missing from a module the Space shadows (its own ``types.py`` over the
#: stdlib's) fails on the Hub too.
NOT_INSTALLED = re.compile(r"\bModuleNotFoundError\b|No module named ")
#: Why such a failure is INCONCLUSIVE, and what to do.
HOST_INSTALLS_NOTHING = "the host builder installs nothing; use --builder venv"


def uninstalled(builder: str | None, texts: Iterable[str | None]) -> bool:
    """Whether a failure is the stand-in's doing, not the Space's: the embedded Hub's ``host``
    builder installs nothing, so a missing module under it (in the build's or the runtime's
    error, or in an answer the probe got) is no verdict. The one place this rule lives."""
    return builder == "host" and any(NOT_INSTALLED.search(text or "") for text in texts)


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
