"""Scan the files staging would take for secrets, by content; and redact secrets in text from
elsewhere (a Space's own error text) with the same detectors.

Only detectors that look for a provider's token format run: detect-secrets' own, the maintained
rule catalog (``rule_catalog``: kingfisher's Betterleaks and Veles rules) and the few of ours
(``token_detectors``); the high-entropy and keyword detectors fire on ordinary code and docs.
A base64 literal that decodes to text is scanned as that text too (a token kept encoded).
Every file is scanned by its content (``unpack``: its strings, UTF-16, compressed and zipped
content), whatever its name: none of detect-secrets' filters runs (they skip lock files,
"swagger" paths, .css/.svg/.map/.png... by name, and lines with an inline ``pragma: allowlist
secret``), since only a plugin or ``--allow-secret`` may allow a secret. A value that is one
template placeholder naming a variable (``{self.password}``, ``${PASSWORD}``, ``<password>``, as
in OpenEnv's ``src/openenv/core/tools/git_server_client.py``) is no secret; anything more in it
(``{Xk9v}Q2m``, ``<Pr0d-P4ss>``...) still is, and a token inside one is found by its own
detector. A quick pass over the whole text (the detectors' patterns, the catalog) picks the lines
worth a detect-secrets scan; secrets over several lines (``secret_spans``: a token split by a
line continuation, a ``.netrc`` entry a line per field) are found too. A finding names the file,
the line and the kind, never the value.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import hashlib
import logging
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from detect_secrets.core.scan import scan_line
from detect_secrets.settings import get_plugins, get_settings, transient_settings

from releaselib.errors import redact
from releaselib.records import SecretFinding
from releaselib.stage import rule_catalog, token_detectors
from releaselib.stage.secret_spans import NEWLINE, Hit, covered, multiline_hits
from releaselib.stage.unpack import texts

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
#: A value that is only a placeholder: ``{name}``, ``{obj.attr}``, ``${NAME}``, ``<name>``,
#: ``$NAME``; a name of at most 40 letters, digits, ``_``, ``.`` (``-`` in ``<...>``) with at most
#: 2 digits (a placeholder names a thing; a password mixes digits in).
PLACEHOLDER = re.compile(
    r"(?=[^0-9]*(?:[0-9][^0-9]*){0,2}$)"
    r"(?:\{[A-Za-z_][\w.]{0,39}\}|\$\{[A-Za-z_]\w{0,39}\}|<[A-Za-z_][\w-]{0,39}>|\$[A-Za-z_]\w{0,39})"
)
OUR_DETECTORS = (
    token_detectors.HuggingFaceTokenDetector,
    token_detectors.GitHubFineGrainedTokenDetector,
    token_detectors.TavilyKeyDetector,
    token_detectors.KaggleKeyDetector,
    token_detectors.DockerConfigAuthDetector,
    token_detectors.NetrcPasswordDetector,
)
SETTINGS: dict[str, Any] = {
    "plugins_used": [
        *({"name": name} for name in DETECTORS),
        *(
            {"name": d.__name__, "path": f"file://{token_detectors.__file__}"}
            for d in OUR_DETECTORS
        ),
        {
            "name": rule_catalog.MaintainedRulesDetector.__name__,
            "path": f"file://{rule_catalog.__file__}",
        },
    ],
    "filters_used": [],
}
#: A base64 literal worth decoding: long enough to hold a token (one as long as a file, more
#: than MAX_LITERAL characters, is data); not part of a longer word (see ``lone_literal``).
BASE64 = re.compile(r"[A-Za-z0-9+/]{24,}={0,2}")
MAX_LITERAL = 4096
#: What the base64 of text holds: upper and lower case letters, and a digit or ``+``/``/``.
BASE64_OF_TEXT = (re.compile("[A-Z]"), re.compile("[a-z]"), re.compile("[0-9+/]"))
#: What may follow a found value in its token (a detector may report only the start of one).
TOKEN_CHARS = re.compile(r"[\w-]*", re.ASCII)
#: What a redaction keeps of a token: a well-known public prefix, never part of a password.
PREFIX = re.compile(r"(?:hf|api_org|gh[pousr]|github_pat|glpat|sk|xox[abpors]|npm|pypi|tvly)[_-]")
LOCK = threading.RLock()

#: Provider key shapes as they appear in prose (an error message, a file name), where the rule
#: catalog's rules, written for source files, want a quote or a line end after the key: the
#: public prefix is kept, the rest becomes ``***``.
KEY_IN_PROSE = re.compile(
    r"(?P<prefix>sk-ant-(?:api|admin)\d\d-|sk-(?:proj-|svcacct-)?|AIza|gh[pousr]_|github_pat_|"
    r"glpat-|tvly-|xox[abprs]-|AKIA|ASIA|hf_)(?P<rest>[A-Za-z0-9_\-]{16,})"
)
#: ``NAME=value`` where the name says it holds a credential: the name is kept.
ASSIGNED = re.compile(
    r"(?P<prefix>\b[A-Z][A-Z0-9_]*(?:API_KEY|TOKEN|SECRET|PASSWORD|ACCESS_KEY)\s*[=:]\s*)"
    r"(?P<rest>[^\s'\",;]{8,})"
)


class Scanner:
    """Scans file contents and redacts text; a file name's redaction is kept by the name, as
    ``src/``'s names recur in every env. detect-secrets' settings are global: one thread scans
    at a time. Staging asks it through ``scan_cache.ContentScan``, which skips what earlier runs
    found clean."""

    def __init__(self) -> None:
        self._names: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._patterns: tuple[re.Pattern[str], ...] | None = None

    def scan(self, files: Iterable[tuple[str, Path]]) -> list[SecretFinding]:
        """Findings in ``files``: (the name to report, the file to read) pairs."""
        return [f for rel, path in files for f in self.scan_file(rel, path.read_bytes())]

    def scan_file(self, rel: str, data: bytes) -> tuple[SecretFinding, ...]:
        """The findings in one file's content, named ``rel``, by line and kind."""
        return tuple(sorted(set(self.scan_bytes(rel, data)), key=lambda f: (f.line, f.kind)))

    def scan_bytes(self, rel: str, data: bytes) -> Iterator[SecretFinding]:
        """The findings in one file's content, named ``rel``."""
        for text in texts(data, rel):
            if isinstance(text, SecretFinding):
                yield text
            else:
                yield from self.scan_text(rel, text)

    def scan_text(self, rel: str, text: str) -> Iterator[SecretFinding]:
        for hit in self.hits(text):
            if not hit.continued:
                digest = hashlib.sha256(hit.value.encode()).hexdigest()
                yield SecretFinding(rel, hit.line, hit.kind, sha256=digest)

    def hits(self, text: str) -> list[Hit]:
        """Each secret in ``text``: those in a line (``line_hits``), a token split over a line
        continuation (``hf_abc\\`` then ``def...``), and a ``.netrc`` entry over several lines."""
        found = self.line_hits(text)
        found += [h for h in multiline_hits(text, self.line_hits) if not covered(h, found)]
        return found

    def line_hits(self, text: str) -> list[Hit]:
        """Each secret in a line of ``text``: where it is and what detected it. A quick pass over
        the whole text (the detectors' patterns, the catalog, decodable base64 literals) picks
        the lines that detect-secrets scans."""
        literals = [
            (m.start(), m.end(), decoded)
            for m in BASE64.finditer(text)
            if lone_literal(text, m) and (decoded := decoded_text(m.group())) is not None
        ]
        if literals and not self.suspect("\n".join(decoded for *_, decoded in literals)):
            literals = []
        if not literals and not self.suspect(text):
            return []
        lines = NEWLINE.split(text)
        starts = [0, *(m.end() for m in NEWLINE.finditer(text))]
        raw = self.suspect_lines(text, lines, starts)
        hidden: dict[int, list[tuple[int, int, str]]] = {}
        for start, end, decoded in literals:
            number = bisect.bisect_right(starts, start)
            offset = starts[number - 1]
            hidden.setdefault(number, []).append((start - offset, end - offset, decoded))
        found: list[Hit] = []
        with LOCK, quiet(), transient_settings(SETTINGS):
            get_settings().disable_filters(*list(get_settings().filters))
            for number in sorted(raw | set(hidden)):
                line = lines[number - 1]
                hits = [
                    Hit(number, kind, value, *span)
                    for kind, value in secrets_in(line)
                    for span in token_spans(line, value)
                ]
                for start, end, decoded in hidden.get(number, ()):
                    hits += [
                        Hit(number, f"{kind} (base64-encoded)", value, start, end)
                        for kind, value in secrets_in(decoded)
                    ]
                found += distinct(hits)
        return found

    def suspect_lines(self, text: str, lines: Sequence[str], starts: Sequence[int]) -> set[int]:
        """The numbers (from 1) of the ``lines`` of ``text`` (starting at ``starts``) where a
        detector's pattern or a catalog rule matches."""
        numbers = {
            bisect.bisect_right(starts, m.start())
            for rx in self.patterns()
            if rx.search(text)
            for m in rx.finditer(text)
        }
        if values := [value for _, value in rule_catalog.findings(text)]:
            numbers |= {n for n, line in enumerate(lines, 1) if any(v in line for v in values)}
        return numbers

    def suspect(self, text: str) -> bool:
        """True if a detector's pattern or a catalog rule matches ``text``."""
        return any(rx.search(text) for rx in self.patterns()) or bool(rule_catalog.findings(text))

    def patterns(self) -> tuple[re.Pattern[str], ...]:
        if self._patterns is None:
            with LOCK, quiet(), transient_settings(SETTINGS):
                self._patterns = tuple(rx for p in get_plugins() for rx in p.denylist)
        return self._patterns

    def redact_name(self, name: str) -> tuple[str, tuple[str, ...]]:
        """``redact`` of a checkout file's name, kept for the scanner's run."""
        if name not in self._names:
            shown, kinds = self.redact(name)
            self._names[name] = shown, tuple(kinds)
        return self._names[name]

    def redact(self, text: str) -> tuple[str, list[str]]:
        """``text`` with each secret in it as ``***`` (after its prefix, like ``ghp_***``),
        and the kinds of secret it held."""
        hits = self.hits(text)
        parts = re.split(f"({NEWLINE.pattern})", text)
        spans: dict[int, list[list[int]]] = {}
        for hit in sorted(hits, key=lambda h: (h.line, h.start)):
            merged = spans.setdefault(hit.line, [])
            if merged and hit.start < merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hit.end)
            else:
                merged.append([hit.start, hit.end, "base64" in hit.kind])
        for number, merged in spans.items():
            line = parts[2 * (number - 1)]
            for start, end, encoded in reversed(merged):
                prefix = None if encoded else PREFIX.match(line, start, end)
                line = line[:start] + (prefix.group() if prefix else "") + "***" + line[end:]
            parts[2 * (number - 1)] = line
        kinds = [h.kind for h in hits if not h.continued]
        text = "".join(parts)
        for shape in (KEY_IN_PROSE, ASSIGNED):
            found = [m for m in shape.finditer(text) if _keylike(m.group("rest"))]
            for m in reversed(found):
                text = text[: m.start()] + m.group("prefix") + "***" + text[m.end() :]
            kinds += ["key shape in prose"] * len(found)
        return text, kinds


def distinct(hits: list[Hit]) -> list[Hit]:
    """One hit per token in a line: detect-secrets' or ours before the catalog's (whose kinds
    are rule ids, without a space), as both find a GitHub token."""
    kept: dict[tuple[int, int], Hit] = {}
    for hit in sorted(hits, key=lambda h: " " not in h.kind):
        kept.setdefault((hit.start, hit.end), hit)
    return list(kept.values())


def secrets_in(line: str) -> list[tuple[str, str]]:
    """(kind, value) of each secret detect-secrets' plugins find in ``line`` (under SETTINGS);
    a value that is only a placeholder is none."""
    found = []
    for secret in scan_line(line):
        value = secret.secret_value or ""
        if value and not PLACEHOLDER.fullmatch(value):
            found.append((secret.type, value))
    return found


def token_spans(line: str, value: str) -> list[tuple[int, int]]:
    """The span of each token in ``line`` that starts with ``value`` (a detector may report only
    its start: detect-secrets' GitHub detector reports ``ghp``); the whole line if none does."""
    spans = []
    start = line.find(value)
    while start >= 0:
        end = TOKEN_CHARS.match(line, start + len(value)).end()  # type: ignore[union-attr]
        spans.append((start, end))
        start = line.find(value, end)
    return spans or [(0, len(line))]


def lone_literal(text: str, match: re.Match[str]) -> bool:
    """True if ``match`` may be the base64 of text: a literal of its own (no ``_``, ``-`` or
    ``=`` joins it to more), at most MAX_LITERAL long, with the characters such base64 has."""
    start, end = match.span()
    joined = (start and text[start - 1] in "_-") or (end < len(text) and text[end] in "_-=")
    return (
        not joined
        and end - start <= MAX_LITERAL
        and all(rx.search(match.group()) for rx in BASE64_OF_TEXT)
    )


def decoded_text(literal: str) -> str | None:
    """The text a base64 literal encodes; None if it is no text."""
    padded = literal + "=" * (-len(literal) % 4)
    try:
        raw = base64.b64decode(padded, validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return text if all(c.isprintable() or c.isspace() for c in text) else None


def holds_secret(text: str) -> bool:
    """True if a detector of the content scan finds a secret in ``text`` (a flag's value)."""
    return bool(_shared.redact(text)[1])


class quiet:
    """detect-secrets logs skipped secret values at info level: keep its log to errors."""

    def __enter__(self) -> None:
        self.logger = logging.getLogger("detect-secrets")
        self.level = self.logger.level
        self.logger.setLevel(logging.ERROR)

    def __exit__(self, *exc: object) -> None:
        self.logger.setLevel(self.level)


_shared = Scanner()


def _keylike(value: str) -> bool:
    """A key's random part: long, with letters and digits mixed (not a word like
    ``learn-experiments`` after ``sk-``)."""
    return (
        len(value) >= 20
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
        and not re.search(r"[a-z]{3,}-[a-z]{3,}", value)
    )


def redact_secrets(text: str) -> str:
    """``text`` that came from outside (a Space's error, an HTTP answer, a file name) with each
    secret the content scan finds in it (provider key shapes and credential assignments in prose
    too), and the configured Hub token, as ``***``: the one redaction of such text before it is
    printed, recorded or written."""
    return redact(_shared.redact(text)[0])
