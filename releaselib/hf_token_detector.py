"""A detect-secrets plugin for Hugging Face tokens, which detect-secrets does not detect.

detect-secrets loads it by file path (``{"name": ..., "path": "file://..."}`` in its settings),
so this module imports nothing of the tool.
"""

from __future__ import annotations

import re
from collections.abc import Generator

from detect_secrets.plugins.base import RegexBasedDetector

#: ``hf_`` and at least 30 letters or digits (user tokens have 34). A literal start keeps the
#: search fast; a match inside a longer word is dropped afterwards.
HF_TOKEN = re.compile(r"hf_[A-Za-z0-9]{30,}")
#: Fewer distinct characters than this is a placeholder (``hf_xxxx...``), not a token.
MIN_DISTINCT = 8


class HuggingFaceTokenDetector(RegexBasedDetector):
    """Scans for Hugging Face access tokens."""

    secret_type = "Hugging Face token"
    denylist = (HF_TOKEN,)

    def analyze_string(self, string: str) -> Generator[str, None, None]:
        for match in HF_TOKEN.finditer(string):
            before = string[match.start() - 1] if match.start() else " "
            token = match.group()
            if not (before.isalnum() or before == "_") and len(set(token[3:])) >= MIN_DISTINCT:
                yield token
