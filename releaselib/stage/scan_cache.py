"""The content scan as staging runs it: earlier runs' clean verdicts in front of the scanner.

A file content, file name or flag value that the scanner found clean is remembered by its
SHA-256 under the user's cache dir, per scanner version (the code of its detectors and the
versions of detect-secrets and kingfisher), so a stage, deploy or release scans only what
changed since the last one and loads the scanner only then. Only clean verdicts are kept: what
holds a secret is scanned again each time, and nothing derived from a secret is written.
``OPENENV_RELEASE_SCAN_CACHE`` names another folder, or ``off`` keeps nothing.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import sys
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from releaselib.records import SecretFinding
    from releaselib.stage.secretscan import Scanner

ENV = "OPENENV_RELEASE_SCAN_CACHE"
#: The verdicts one cache file keeps (the newest); about 33 bytes each.
MAX_VERDICTS = 50_000
#: The modules whose code decides what the scan finds.
SCANNER_MODULES = (
    "secretscan",
    "token_detectors",
    "rule_catalog",
    "secret_spans",
    "unpack",
    "media_strings",
)
SCANNER_DISTRIBUTIONS = ("detect-secrets", "kingfisher-secret-scanner")


def scanner_version() -> str:
    """A digest of what decides the scan's verdicts: its modules' code, its libraries' versions
    and the Python version (regular expression semantics)."""
    import importlib.metadata

    digest = hashlib.sha256(repr(sys.version_info[:2]).encode())
    here = Path(__file__).parent
    for name in SCANNER_MODULES:
        digest.update((here / f"{name}.py").read_bytes())
    for dist in SCANNER_DISTRIBUTIONS:
        digest.update(f"{dist}=={importlib.metadata.version(dist)}".encode())
    return digest.hexdigest()[:16]


def cache_folder() -> Path | None:
    value = os.environ.get(ENV)
    if value == "off":
        return None
    if value:
        return Path(value)
    import platformdirs

    return Path(platformdirs.user_cache_dir("openenv-release")) / "scan"


def verdict(kind: str, data: bytes) -> str:
    """The key of a clean verdict on ``data`` scanned as ``kind`` (``file`` or ``text``)."""
    return hashlib.sha256(kind.encode() + b"\0" + data).hexdigest()[:32]


class CleanVerdicts:
    """The clean verdicts of earlier runs in one cache file, and this run's, written back (merged
    with what other runs wrote meanwhile) when the process ends."""

    def __init__(self, folder: Path | None) -> None:
        self._file = folder / f"{scanner_version()}.json" if folder else None
        self._known = self._read()
        self._new: dict[str, None] = {}
        self._lock = threading.Lock()
        self._saving = False

    def __contains__(self, key: str) -> bool:
        return key in self._known or key in self._new

    def add(self, key: str) -> None:
        if self._file is None or key in self:
            return
        with self._lock:
            self._new[key] = None
            if not self._saving:
                self._saving = True
                atexit.register(self.save)

    def _read(self) -> dict[str, None]:
        if self._file is None:
            return {}
        try:
            keys = json.loads(self._file.read_bytes())["clean"]
        except (OSError, ValueError, KeyError, TypeError):
            return {}  # none yet, or unreadable: scan everything, and write a good one
        return dict.fromkeys(k for k in keys if isinstance(k, str))

    def save(self) -> None:
        """Write the file through a temp file and a rename; a cache that cannot be written is
        only slower next time, so an OS error is ignored."""
        if self._file is None or not self._new:
            return
        with self._lock:
            keys = {**self._read(), **self._known, **self._new}
            kept = list(keys)[-MAX_VERDICTS:]
            try:
                self._file.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=".scan.", dir=self._file.parent)
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump({"clean": kept}, out)
                os.replace(tmp, self._file)
            except OSError:
                return
            self._known, self._new = dict.fromkeys(kept), {}


_verdicts: CleanVerdicts | None = None
_verdicts_lock = threading.Lock()


def clean_verdicts() -> CleanVerdicts:
    global _verdicts
    with _verdicts_lock:
        if _verdicts is None:
            _verdicts = CleanVerdicts(cache_folder())
        return _verdicts


class ContentScan:
    """What staging asks of the scanner (a file's findings, a file name's redaction), answered
    from clean verdicts where it can; the scanner is imported and built on the first miss.
    A file's findings are also kept by (path, size, mtime) for the run, so files every env shares
    (``src/``) are read once."""

    def __init__(self, verdicts: CleanVerdicts | None = None) -> None:
        self._verdicts = verdicts if verdicts is not None else clean_verdicts()
        self._scanner: Scanner | None = None
        self._seen: dict[tuple[str, int, int], tuple[SecretFinding, ...]] = {}

    def scanner(self) -> Scanner:
        if self._scanner is None:
            from releaselib.stage.secretscan import Scanner  # detect-secrets is slow to import

            self._scanner = Scanner()
        return self._scanner

    def scan(self, files: Iterable[tuple[str, Path]]) -> list[SecretFinding]:
        """Findings in ``files``: (the name to report, the file to read) pairs."""
        found: list[SecretFinding] = []
        for rel, path in files:
            stat = path.stat()
            key = (str(path), stat.st_size, stat.st_mtime_ns)
            if key not in self._seen:
                self._seen[key] = self.scan_content(rel, path.read_bytes())
            found += self._seen[key]
        return found

    def scan_content(self, rel: str, data: bytes) -> tuple[SecretFinding, ...]:
        clean = verdict("file", data)
        if clean in self._verdicts:
            return ()
        findings = self.scanner().scan_file(rel, data)
        if not findings:
            self._verdicts.add(clean)
        return findings

    def redact_name(self, name: str) -> tuple[str, tuple[str, ...]]:
        """``name`` with each secret in it as ``***``, and the kinds of secret it held."""
        clean = verdict("text", name.encode("utf-8", "surrogateescape"))
        if clean in self._verdicts:
            return name, ()
        shown, kinds = self.scanner().redact_name(name)
        if not kinds and shown == name:
            self._verdicts.add(clean)
        return shown, kinds


def holds_secret(text: str) -> bool:
    """True if a detector of the content scan finds a secret in ``text`` (a flag's value)."""
    verdicts = clean_verdicts()
    clean = verdict("text", text.encode("utf-8", "surrogateescape"))
    if clean in verdicts:
        return False
    from releaselib.stage.secretscan import holds_secret as scanned  # slow to import

    if scanned(text):
        return True
    verdicts.add(clean)
    return False
