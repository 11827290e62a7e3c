"""The tool's exceptions. Each carries a one-line message that names what failed and what to do."""

from __future__ import annotations

import os
import re

TOKEN_VARS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
HF_TOKEN_RE = re.compile(r"hf_[A-Za-z0-9]{30,}")
REDACTED = "hf_***"


def redact(text: str) -> str:
    """``text`` with the configured Hub tokens, and anything shaped like one, as ``hf_***``."""
    from huggingface_hub import get_token  # lazily: the CLI starts without huggingface_hub

    for secret in {*(os.environ.get(name) for name in TOKEN_VARS), get_token()}:
        if secret and len(secret) >= 8:  # a shorter one would match by chance
            text = text.replace(secret, REDACTED)
    return HF_TOKEN_RE.sub(REDACTED, text)


def short(text: str, most: int = 80) -> str:
    """``text`` on one line (control characters escaped), cut in the middle when long."""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return shown if len(shown) <= most else f"{shown[: most // 2 - 5]}…{shown[-(most // 2) :]}"


class ReleaseError(Exception):
    """Base class: a failure the user can act on; the CLI prints it as one line.

    The message never holds a Hub token (a plugin's or library's text may: it is redacted).
    """

    exit_code = 1

    def __init__(self, message: str, *, remedy: str | None = None) -> None:
        self.message = redact(message)
        self.remedy = remedy
        super().__init__(self.one_line())

    def one_line(self) -> str:
        if self.remedy:
            return f"{self.message}; {self.remedy}"
        return self.message


class UsageError(ReleaseError):
    """Bad flags or arguments."""

    exit_code = 2


class PluginError(ReleaseError):
    """A plugin is broken or two plugins claim the same thing."""

    exit_code = 3


class StageError(ReleaseError):
    """An env could not be staged (unparseable file, failed check)."""


class HubError(ReleaseError):
    """The Hub refused or failed a request."""


class UnreachableError(HubError):
    """No connection to the Hub at all: the step fails as a whole, not env by env."""


class AuthError(HubError):
    """No token, or the Hub rejected it."""

    exit_code = 4


class LedgerError(ReleaseError):
    """The ledger file cannot be used for this run."""


class PinError(ReleaseError):
    """A pin could not be written or committed."""


class PromoteError(ReleaseError):
    """A candidate's tree cannot be published as it is."""
