"""detect-secrets plugins for credentials that neither detect-secrets nor the maintained rule
catalog (``rule_catalog``) detects: Hugging Face tokens with digits, GitHub fine-grained tokens,
Tavily keys, Kaggle keys (``kaggle.json``), registry logins in a Docker ``config.json`` and
passwords in a ``.netrc``. Nothing maintained ships these, so they are ours: keep them few.

detect-secrets loads them by file path (``{"name": ..., "path": "file://..."}`` in its
settings), so this module imports nothing of the tool.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Generator

from detect_secrets.plugins.base import RegexBasedDetector

#: Fewer distinct characters than this after the prefix is a placeholder (``hf_xxxx...``).
MIN_DISTINCT = 8
#: The same for a value that its key names (a password): those are shorter.
MIN_DISTINCT_NAMED = 4
#: What may stand right before a token although it ends in a letter or digit: an escape in a
#: string (``"\\nhf_..."``), a URL-encoded character (``token%3Dhf_...``), ``\\x3d``, ``\\u003d``.
ESCAPE_BEFORE = re.compile(r"(?:\\[nrtfv]|%[0-9A-Fa-f]{2}|\\x[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4})$")


class TokenDetector(RegexBasedDetector):
    """A token with a literal prefix: a match inside a longer word, or a placeholder, is
    dropped. The literal start keeps the search fast."""

    prefix_length = 0

    def analyze_string(self, string: str) -> Generator[str, None, None]:
        for pattern in self.denylist:
            for match in pattern.finditer(string):
                if starts_a_word(string, match.start()) and placeholder_free(
                    match.group()[self.prefix_length :]
                ):
                    yield match.group()


def starts_a_word(string: str, start: int) -> bool:
    before = string[start - 1] if start else " "
    if not (before.isalnum() or before == "_"):
        return True
    return ESCAPE_BEFORE.search(string, max(0, start - 6), start) is not None


def placeholder_free(body: str) -> bool:
    return len(set(body.replace("_", ""))) >= MIN_DISTINCT


class HuggingFaceTokenDetector(TokenDetector):
    """Hugging Face access tokens: ``hf_`` (user) and ``api_org_`` (organisation)."""

    secret_type = "Hugging Face token"
    denylist = (re.compile(r"hf_[A-Za-z0-9]{30,}"), re.compile(r"api_org_[A-Za-z0-9]{30,}"))
    prefix_length = 3


class GitHubFineGrainedTokenDetector(TokenDetector):
    """GitHub fine-grained personal access tokens (``github_pat_``, 82 characters after)."""

    secret_type = "GitHub fine-grained token"
    denylist = (re.compile(r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}"),)
    prefix_length = 11


class TavilyKeyDetector(TokenDetector):
    """Tavily API keys: ``tvly-``, an optional ``dev-``/``prod-``, then the key."""

    secret_type = "Tavily API key"
    denylist = (re.compile(r"tvly-(?:[a-z]{2,8}-)?[A-Za-z0-9]{20,}"),)
    prefix_length = 5


class ContextDetector(RegexBasedDetector):
    """A value that only its key marks as a secret (group 1 of each pattern); one of fewer than
    MIN_DISTINCT_NAMED distinct characters is a placeholder (``xxxxxx``)."""

    def analyze_string(self, string: str) -> Generator[str, None, None]:
        for pattern in self.denylist:
            for match in pattern.finditer(string):
                value = match.group(1)
                if len(set(value)) >= MIN_DISTINCT_NAMED and self.holds_secret(value):
                    yield match.group(1)

    def holds_secret(self, value: str) -> bool:
        return True


class KaggleKeyDetector(ContextDetector):
    """A Kaggle API key: 32 hex digits as ``"key"`` in a ``kaggle.json`` or as ``KAGGLE_KEY``."""

    secret_type = "Kaggle API key"
    denylist = (
        re.compile(r'"key"\s*:\s*"([0-9a-f]{32})"'),
        re.compile(r"""KAGGLE_KEY["']?\s*[:=]\s*["']?([0-9a-f]{32})\b"""),
    )


class DockerConfigAuthDetector(ContextDetector):
    """A registry login in a Docker ``config.json``: ``"auth"`` holding base64 of
    ``user:password``."""

    secret_type = "Docker registry auth"
    denylist = (re.compile(r'"auth"\s*:\s*"([A-Za-z0-9+/]{8,}={0,2})"'),)

    def holds_secret(self, value: str) -> bool:
        try:
            user, _, password = base64.b64decode(value, validate=True).partition(b":")
        except (binascii.Error, ValueError):
            return False
        return bool(user and password)


class NetrcPasswordDetector(ContextDetector):
    """A ``.netrc`` entry's password: ``machine <host> [login <user>] password <secret>``."""

    secret_type = "netrc password"
    denylist = (re.compile(r"machine\s+\S+\s+(?:login\s+\S+\s+)?password\s+(\S{6,})"),)


#: A ``.netrc`` entry over any lines: ``machine <host>`` (or ``default``) as words, then
#: its ``login`` and ``account`` in any order, then ``password <secret>``.
NETRC_ENTRY = re.compile(
    r"(?<!\S)(?:machine[ \t]+\S+|default)(?P<fields>(?:\s+(?:login|account)\s+\S+)+)"
    r"\s+password\s+(\S+)"
)


def netrc_passwords(text: str) -> list[tuple[int, int]]:
    """The span of each ``.netrc`` password in ``text`` whose entry spans lines (one on the
    ``machine`` line is the detector's) and names a ``login`` (prose such as "machine
    learning" then "password reset" does not); a placeholder (few distinct characters,
    ``$VAR``) is none."""
    return [
        m.span(2)
        for m in NETRC_ENTRY.finditer(text)
        if re.search(r"\blogin\s", m["fields"])
        if "\n" in text[m.start() : m.start(2)] or "\r" in text[m.start() : m.start(2)]
        if len(set(m.group(2))) >= MIN_DISTINCT_NAMED and not m.group(2).startswith(("$", "{", "<"))
    ]
