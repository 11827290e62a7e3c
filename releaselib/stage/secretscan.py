"""Scan the files staging would take for secrets, by content, with detect-secrets' detectors.

Only detectors that look for a provider's token format run (plus ours, in ``token_detectors``):
the high-entropy and keyword detectors fire on ordinary code and docs. Every file is scanned by
its content, whatever its name: none of detect-secrets' filters runs (they skip lock files,
"swagger" paths, .css/.svg/.map/.png... by name, and lines with an inline ``pragma: allowlist
secret``), since only a plugin or ``--allow-secret`` may allow a secret. A value that is one
template placeholder naming a variable (``{self.password}``, ``${PASSWORD}``, ``<password>``, as
in OpenEnv's ``src/openenv/core/tools/git_server_client.py``) is no secret; anything more in it
(``{Xk9v}Q2m``, ``<Pr0d-P4ss>``...) still is, and a token inside one is found by its own
detector. The bytes are read as UTF-8 with bad bytes replaced (a binary's strings stay), as
UTF-16 when there is a BOM or NUL bytes; gzip, bz2, xz and lzma content is decompressed and
every member of a zip file (found by its magic bytes: .whl, .docx, .xlsx, .npz too) is read,
nested up to 3 deep and within MAX_UNPACKED bytes per file. A quick pass with the detectors' own
patterns picks the lines worth a detect-secrets scan; a finding names the file, the line and the
kind, never the value.
"""

from __future__ import annotations

import bz2
import codecs
import functools
import gzip
import hashlib
import io
import logging
import lzma
import re
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from detect_secrets.core.potential_secret import PotentialSecret
from detect_secrets.core.scan import scan_line
from detect_secrets.settings import get_plugins, get_settings, transient_settings

from releaselib.records import SecretFinding
from releaselib.stage import token_detectors

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
)
SETTINGS: dict[str, Any] = {
    "plugins_used": [
        *({"name": name} for name in DETECTORS),
        *(
            {"name": d.__name__, "path": f"file://{token_detectors.__file__}"}
            for d in OUR_DETECTORS
        ),
    ],
    "filters_used": [],
}
#: The most decompressed bytes of one file (all its archive members and compressed layers
#: together) that are scanned; more is a finding.
MAX_UNPACKED = 256_000_000
TOO_BIG = f"compressed content over {MAX_UNPACKED // 1_000_000} MB, not scanned"
UNREADABLE = "an encrypted zip member, not scanned"
#: How deep compressed content inside compressed content is read.
MAX_DEPTH = 3
#: The magic bytes of compressed streams, and how to open each.
STREAMS: tuple[tuple[bytes, Any], ...] = (
    (b"\x1f\x8b", lambda f: gzip.GzipFile(fileobj=f)),
    (b"BZh", bz2.BZ2File),
    (b"\xfd7zXZ\x00", lzma.LZMAFile),
    (b"\x5d\x00\x00", lzma.LZMAFile),  # lzma "alone" (.lzma)
)
ZIP_MAGIC = b"PK\x03\x04"
UNREADABLE_STREAM = (
    OSError,
    EOFError,
    zlib.error,
    lzma.LZMAError,
    zipfile.BadZipFile,
    NotImplementedError,
    RuntimeError,
)
NEWLINE = re.compile(r"\r\n|\r|\n")

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
        for rel, path in files:
            stat = path.stat()
            key = (str(path), stat.st_size, stat.st_mtime_ns)
            if key not in self._seen:
                self._seen[key] = tuple(
                    sorted(
                        set(self.scan_bytes(rel, path.read_bytes())), key=lambda f: (f.line, f.kind)
                    )
                )
            found += self._seen[key]
        return found

    def scan_bytes(self, rel: str, data: bytes) -> Iterator[SecretFinding]:
        """The findings in one file's content, named ``rel``."""
        for text in texts(data, rel):
            if isinstance(text, SecretFinding):
                yield text
            elif self.suspect(text):
                yield from self.scan_text(rel, text)

    def scan_text(self, rel: str, text: str) -> Iterator[SecretFinding]:
        for number, secret in self.secrets_in(text):
            value = (secret.secret_value or "").encode()
            yield SecretFinding(rel, number, secret.type, sha256=hashlib.sha256(value).hexdigest())

    def secrets_in(self, text: str) -> list[tuple[int, PotentialSecret]]:
        """(line number, what detect-secrets found) for each secret in ``text``."""
        found = []
        with quiet(), transient_settings(SETTINGS):
            get_settings().disable_filters(*list(get_settings().filters))
            for number, line in enumerate(NEWLINE.split(text), start=1):
                if self.suspect(line):
                    found += [
                        (number, secret)
                        for secret in scan_line(line)
                        if not PLACEHOLDER.fullmatch(secret.secret_value or "")
                    ]
        return found

    def redact(self, text: str) -> tuple[str, list[str]]:
        """``text`` (a file name, say) with each secret in it as its prefix and ``_***``, and
        the kinds of secret it held."""
        if not self.suspect(text):
            return text, []
        kinds = []
        for _, secret in self.secrets_in(text):
            value = secret.secret_value or ""
            text = text.replace(value, value.split("_")[0] + "_***") if value else text
            kinds.append(secret.type)
        return text, kinds

    def suspect(self, text: str) -> bool:
        """True if a regex of the detectors that run matches: the quick pass."""
        if self._patterns is None:
            with quiet(), transient_settings(SETTINGS):
                self._patterns = tuple(rx for p in get_plugins() for rx in p.denylist)
        return any(rx.search(text) for rx in self._patterns)


def holds_secret(text: str) -> bool:
    """True if a detector of the content scan finds a secret in ``text`` (a flag's value)."""
    return bool(Scanner().redact(text)[1])


def texts(
    data: bytes, rel: str, budget: list[int] | None = None, depth: int = 0
) -> Iterator[str | SecretFinding]:
    """The texts a file's bytes may hold; a SecretFinding for compressed content too big to
    scan (``budget``: the decompressed bytes this file may still unpack)."""
    budget = [MAX_UNPACKED] if budget is None else budget
    if data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        yield data.decode("utf-16", errors="replace")
    yield data.decode("utf-8", errors="replace")
    if b"\0" in data:  # UTF-16 without a BOM, or UTF-16 strings in a binary: both alignments
        yield data.decode("utf-16-le", errors="replace")
        yield data[1:].decode("utf-16-le", errors="replace")
    if depth >= MAX_DEPTH:
        return
    for content in unpacked(data, rel, budget):
        if isinstance(content, SecretFinding):
            yield content
            return
        yield from texts(content, rel, budget, depth + 1)


def unpacked(data: bytes, rel: str, budget: list[int]) -> Iterator[bytes | SecretFinding]:
    """What a compressed stream or each member of a zip file holds (as much as is readable),
    then a SecretFinding once ``budget`` is spent."""
    opener = next((o for magic, o in STREAMS if data.startswith(magic)), None)
    if opener is not None:
        yield from bounded(lambda: opener(io.BytesIO(data)), rel, budget)
    elif data.startswith(ZIP_MAGIC):
        try:
            archive = zipfile.ZipFile(io.BytesIO(data))
        except (zipfile.BadZipFile, OSError, ValueError):
            return
        with archive:
            for info in archive.infolist():
                if info.is_dir():
                    continue
                if info.flag_bits & 0x1:
                    yield SecretFinding(rel, 1, UNREADABLE)
                    return
                for content in bounded(functools.partial(archive.open, info), rel, budget):
                    yield content
                    if isinstance(content, SecretFinding):
                        return


def bounded(open_: Any, rel: str, budget: list[int]) -> Iterator[bytes | SecretFinding]:
    """The bytes ``open_()`` reads (what a truncated or corrupt stream gave), or a
    SecretFinding when they would spend more than ``budget``."""
    out = bytearray()
    try:
        with open_() as stream:
            while chunk := stream.read(1 << 20):
                out += chunk
                if len(out) > budget[0]:
                    yield SecretFinding(rel, 1, TOO_BIG)
                    return
    except UNREADABLE_STREAM:
        pass  # truncated, corrupt, or a compression zipfile cannot read: scan what it gave
    budget[0] -= len(out)
    yield bytes(out)


class quiet:
    """detect-secrets logs skipped secret values at info level: keep its log to errors."""

    def __enter__(self) -> None:
        self.logger = logging.getLogger("detect-secrets")
        self.level = self.logger.level
        self.logger.setLevel(logging.ERROR)

    def __exit__(self, *exc: object) -> None:
        self.logger.setLevel(self.level)
