"""A detect-secrets plugin that runs a maintained rule catalog: kingfisher's bundled rules
(MongoDB's kingfisher-secret-scanner), which carry Betterleaks' rules (the successor of
gitleaks' default rules: LLM providers, cloud, CI, registries, experiment trackers...) and
Google's Veles rules.

detect-secrets loads the plugin by file path (``{"name": ..., "path": "file://..."}`` in its
settings), anew whenever its settings change; the plugin calls this module as imported by name,
so the catalog is compiled once per process (kingfisher caches the compiled rules on disk: about
0.2 s after the first time).
"""

from __future__ import annotations

import os
import pwd
import re
import threading
from pathlib import Path
from typing import Any, Final

from detect_secrets.core.potential_secret import PotentialSecret
from detect_secrets.plugins.base import BasePlugin

#: kingfisher's default confidence: its low-confidence rules fire on ordinary code.
CONFIDENCE: Final = "medium"
_lock = threading.RLock()  # the scanner is made once, and used by one thread at a time
_scanner: Any = None


def scanner() -> Any:
    """The process's kingfisher scanner. Base64 decoding is the content scan's own (it runs
    every detector, not only these rules), so kingfisher's is off."""
    global _scanner
    with _lock:
        if _scanner is None:
            from kingfisher_sdk import Rules, Scanner  # the rule compile is paid on first use

            rules = Rules(confidence=CONFIDENCE, cache_dir=cache_dir())
            _scanner = Scanner(rules, base64=False)
        return _scanner


def cache_dir() -> str | None:
    """Where the compiled catalog is kept: kingfisher's own ``KF_RULE_CACHE_DIR`` if set, else
    the account's ``~/.cache/kingfisher/rule-cache`` (kingfisher's default), found from the
    account, not ``$HOME``: a run whose HOME is a temp folder would compile it anew each time
    (3 s, 27 s on a busy machine)."""
    if os.environ.get("KF_RULE_CACHE_DIR"):
        return None
    return str(Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "kingfisher" / "rule-cache")


def findings(text: str) -> list[tuple[str, str]]:
    """(rule id, value) for each finding a rule reports in ``text``; a rule's helper match
    (one part of a pair, like an AWS secret key without its key id) is no finding."""
    with _lock:
        found = scanner().scan(text)
    return [(f.rule_id, f.secret) for f in found if f.visible and f.secret]


class MaintainedRulesDetector(BasePlugin):
    """Every visible finding of the catalog, its kind the rule id
    (``betterleaks.anthropic-api-key``)."""

    secret_type = "maintained rule catalog"
    denylist: tuple[re.Pattern[str], ...] = ()  # no regex of its own: see suspect()

    def analyze_string(self, string: str) -> Any:
        for _, value in catalog().findings(string):
            yield value

    def analyze_line(
        self, filename: str, line: str, line_number: int = 0, context: Any = None, **kwargs: Any
    ) -> set[PotentialSecret]:
        return {
            PotentialSecret(type=rule, filename=filename, secret=value, line_number=line_number)
            for rule, value in catalog().findings(line)
        }


def catalog() -> Any:
    """This module as imported by name (not the copy detect-secrets loaded by path)."""
    from releaselib.stage import rule_catalog

    return rule_catalog
