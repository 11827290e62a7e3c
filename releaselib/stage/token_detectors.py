"""detect-secrets plugins for tokens it does not detect: Hugging Face user and org tokens, and
GitHub fine-grained tokens.

detect-secrets loads them by file path (``{"name": ..., "path": "file://..."}`` in its
settings), so this module imports nothing of the tool.
"""

from __future__ import annotations

import re
from collections.abc import Generator

from detect_secrets.plugins.base import RegexBasedDetector

#: Fewer distinct characters than this after the prefix is a placeholder (``hf_xxxx...``).
MIN_DISTINCT = 8
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
