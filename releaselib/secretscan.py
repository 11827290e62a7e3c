"""Scan the files staging would take for secrets, by content, with detect-secrets.

Only detectors that look for a provider's token format run (plus ours for Hugging Face
tokens): the high-entropy and keyword detectors fire on ordinary code and docs. A quick pass
with the detectors' own patterns picks the files worth a full detect-secrets scan, which keeps
staging fast; a finding names the file, the line and the kind, never the value.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from detect_secrets.core.scan import scan_file, scan_line
from detect_secrets.settings import get_plugins, transient_settings

from releaselib import hf_token_detector
from releaselib.records import SecretFinding

#: detect-secrets' detectors of a provider's token format that need no keyword context: none
#: fires on the OpenEnv envs, and each costs little (the keyword-style ones for Artifactory,
#: Cloudant, IBM, Mailchimp, SoftLayer and Telegram are slow and fire on ordinary code).
DETECTORS = (
    "AWSKeyDetector",
    "AzureStorageKeyDetector",
    "BasicAuthDetector",
    "DiscordBotTokenDetector",
    "GitHubTokenDetector",
    "GitLabTokenDetector",
    "JwtTokenDetector",
    "NpmDetector",
    "OpenAIDetector",
    "PrivateKeyDetector",
    "PypiTokenDetector",
    "SendGridDetector",
    "SlackDetector",
    "SquareOAuthDetector",
    "StripeDetector",
    "TwilioKeyDetector",
)
SETTINGS: dict[str, Any] = {
    "plugins_used": [
        *({"name": name} for name in DETECTORS),
        {
            "name": hf_token_detector.HuggingFaceTokenDetector.__name__,
            "path": f"file://{hf_token_detector.__file__}",
        },
    ]
}

Key = tuple[str, int, int]


class Scanner:
    """Scans checkout files; a file's findings are kept by (path, size, mtime), so files shared
    by every env (``src/``) are scanned once per run."""

    def __init__(self) -> None:
        self._seen: dict[Key, tuple[SecretFinding, ...]] = {}
        self._patterns: tuple[re.Pattern[str], ...] | None = None

    def scan(self, files: Iterable[tuple[str, Path]]) -> list[SecretFinding]:
        """Findings in ``files``: (the name to report, the file to read) pairs."""
        found: list[SecretFinding] = []
        suspects: list[tuple[Key, str, str]] = []
        for rel, path in files:
            stat = path.stat()
            key = (str(path), stat.st_size, stat.st_mtime_ns)
            if key in self._seen:
                found += self._seen[key]
                continue
            text = path.read_bytes().decode("utf-8", errors="replace")
            if any(p.search(text) for p in self.patterns()):
                suspects.append((key, rel, text))
            else:
                self._seen[key] = ()
        if suspects:
            with quiet(), transient_settings(SETTINGS):
                for key, rel, text in suspects:
                    self._seen[key] = tuple(
                        sorted(
                            set(scan_one(Path(key[0]), rel, text)), key=lambda f: (f.line, f.kind)
                        )
                    )
                    found += self._seen[key]
        return found

    def patterns(self) -> tuple[re.Pattern[str], ...]:
        """Every regex of the detectors that run: what the quick pass looks for."""
        if self._patterns is None:
            with quiet(), transient_settings(SETTINGS):
                self._patterns = tuple(rx for p in get_plugins() for rx in p.denylist)
        return self._patterns


def scan_one(path: Path, rel: str, text: str) -> Iterator[SecretFinding]:
    """detect-secrets' findings in one file. It skips files that are not UTF-8, so their
    suspect lines are scanned one by one."""
    if "\ufffd" not in text:
        for secret in scan_file(str(path)):
            yield SecretFinding(rel, secret.line_number, secret.type)
        return
    for number, line in enumerate(text.splitlines(), start=1):
        for secret in scan_line(line):
            yield SecretFinding(rel, number, secret.type)


class quiet:
    """detect-secrets logs skipped secret values at info level: keep its log to errors."""

    def __enter__(self) -> None:
        self.logger = logging.getLogger("detect-secrets")
        self.level = self.logger.level
        self.logger.setLevel(logging.ERROR)

    def __exit__(self, *exc: object) -> None:
        self.logger.setLevel(self.level)
