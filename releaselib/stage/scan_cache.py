"""The content scan as staging runs it: earlier runs' clean verdicts in front of the scanner.

A file content, file name or flag value that the scanner found clean is remembered by its
SHA-256 under the user's cache dir, per scanner version (the code of its detectors and the
versions of detect-secrets and kingfisher), so a stage, deploy or release scans only what
changed since the last one and loads the scanner only then. So are a file's findings when an
allowance pins each one's value by its SHA-256 (a plugin's ``AllowedSecret(sha256=...)``): what
is written of them (line, kind, that hash) is what the plugin declares. Any other finding is
scanned again each time, and nothing else derived from a secret is written.
``OPENENV_RELEASE_SCAN_CACHE`` names another folder (an absolute path), or ``off`` keeps nothing.
A cache folder or file that another account owns, that others may write, or a file that is a
symlink is not used: whoever can write it could make a secret look clean.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Collection, Iterable
from pathlib import Path
from stat import S_ISLNK, S_ISREG
from typing import TYPE_CHECKING

from releaselib.records import SecretFinding

if TYPE_CHECKING:
    from releaselib.stage.secretscan import Scanner

ENV = "OPENENV_RELEASE_SCAN_CACHE"
#: The verdicts one cache file keeps (the newest); about 33 bytes each.
MAX_VERDICTS = 50_000
#: A cache file of another scanner version unused this long is removed when a run saves.
STALE_SECONDS = 30 * 86_400
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


#: Values of ENV that keep nothing.
OFF = frozenset({"off", "0", "false", "no", "none"})


def cache_folder() -> Path | None:
    """The folder of the cache files; None when ENV turns the cache off. UsageError for a
    relative path (it would land in whatever folder the run starts in, often the checkout)."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() in OFF:
        return None
    if value:
        if not os.path.isabs(value):
            from releaselib.errors import UsageError

            raise UsageError(
                f"{ENV}={value}: not an absolute path",
                remedy=f"set {ENV} to an absolute folder, or to off to keep no verdicts",
            )
        return Path(value)
    import platformdirs

    return Path(platformdirs.user_cache_dir("openenv-release")) / "scan"


def trusted(path: Path, *, follow: bool) -> bool:
    """True if ``path`` does not exist, or is this account's and only it may write it (with
    ``follow`` False, a symlink is not)."""
    try:
        found = path.stat() if follow else path.lstat()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    mine = found.st_uid == os.getuid() and not found.st_mode & 0o022
    return mine and not S_ISLNK(found.st_mode)


def verdict(kind: str, data: bytes) -> str:
    """The key of a clean verdict on ``data`` scanned as ``kind`` (``file`` or ``text``)."""
    return hashlib.sha256(kind.encode() + b"\0" + data).hexdigest()[:32]


#: A file's findings as kept: (line, kind, SHA-256 of the value) each.
Kept = tuple[tuple[int, str, str], ...]


class CleanVerdicts:
    """The verdicts of earlier runs in one cache file (clean, or findings that allowances pin),
    and this run's, written back (merged with what other runs wrote meanwhile) when the process
    ends."""

    def __init__(self, folder: Path | None) -> None:
        file = folder / f"{scanner_version()}.json" if folder else None
        self._file = (
            file
            if file and trusted(file.parent, follow=True) and trusted(file, follow=False)
            else None
        )
        self._known = self._read()
        self._new: dict[str, Kept] = {}
        self._lock = threading.Lock()
        self._saving = False

    def __contains__(self, key: str) -> bool:
        """True if what ``key`` names was found clean."""
        return self.get(key) == ()

    def get(self, key: str) -> Kept | None:
        """The findings kept for ``key`` (empty: clean), or None if it has no verdict."""
        return self._new.get(key, self._known.get(key))

    def add(self, key: str, kept: Kept = ()) -> None:
        if self._file is None or self.get(key) is not None:
            return
        with self._lock:
            self._new[key] = kept
            if not self._saving:
                self._saving = True
                atexit.register(self.save)

    def _read(self) -> dict[str, Kept]:
        if self._file is None:
            return {}
        try:
            data = json.loads(_read_own(self._file))
            clean = dict.fromkeys((k for k in data["clean"] if isinstance(k, str)), ())
            pinned = {
                key: tuple((int(line), str(kind), str(sha)) for line, kind, sha in found)
                for key, found in data.get("pinned", {}).items()
            }
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return {}  # none yet, or unreadable: scan everything, and write a good one
        return {**clean, **pinned}

    def save(self) -> None:
        """Write the file through a temp file and a rename; a cache that cannot be written is
        only slower next time, so an OS error is ignored."""
        if self._file is None or not self._new:
            return
        with self._lock:
            verdicts = {**self._read(), **self._known, **self._new}
            kept = dict(list(verdicts.items())[-MAX_VERDICTS:])
            data = {
                "clean": [key for key, found in kept.items() if not found],
                "pinned": {key: found for key, found in kept.items() if found},
            }
            try:
                self._file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=".scan.", dir=self._file.parent)
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump(data, out)
                os.replace(tmp, self._file)
            except OSError:
                return
            self._known, self._new = kept, {}
            remove_stale(self._file)


def remove_stale(current: Path) -> None:
    """Remove the cache files of other scanner versions (an upgrade starts a new one) that no
    run has written for STALE_SECONDS; best effort."""
    now = time.time()
    for other in current.parent.glob("*.json"):
        try:
            if (
                other != current
                and re.fullmatch(r"[0-9a-f]{16}\.json", other.name)
                and now - other.lstat().st_mtime > STALE_SECONDS
            ):
                other.unlink()
        except OSError:
            continue


def _read_own(file: Path) -> bytes:
    """The bytes of ``file`` if, as opened, it is a regular file of this account that only it
    may write; else OSError. Checked on the open file, not the path: a file swapped in after
    ``trusted`` looked at the path is refused too."""
    with open(os.open(file, os.O_RDONLY | os.O_NOFOLLOW), "rb") as opened:
        found = os.fstat(opened.fileno())
        if not S_ISREG(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o022:
            raise PermissionError(f"{file}: not this account's own file")
        return opened.read()


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

    def scan(
        self, files: Iterable[tuple[str, Path]], pinned: Collection[str] = ()
    ) -> list[SecretFinding]:
        """Findings in ``files``: (the name to report, the file to read) pairs. A file whose
        every finding's value hash is in ``pinned`` (what allowances pin) keeps its verdict."""
        found: list[SecretFinding] = []
        for rel, path in files:
            stat = path.stat()
            key = (str(path), stat.st_size, stat.st_mtime_ns)
            if key not in self._seen:
                self._seen[key] = self.scan_content(rel, path.read_bytes(), pinned)
            found += self._seen[key]
        return found

    def scan_content(
        self, rel: str, data: bytes, pinned: Collection[str] = ()
    ) -> tuple[SecretFinding, ...]:
        key = verdict("file", data)
        kept = self._verdicts.get(key)
        if kept is not None:
            return tuple(SecretFinding(rel, line, kind, sha256=sha) for line, kind, sha in kept)
        findings = self.scanner().scan_file(rel, data)
        if all(f.sha256 in pinned for f in findings):
            self._verdicts.add(key, tuple((f.line, f.kind, f.sha256) for f in findings))
        return findings

    def redact_name(self, name: str) -> tuple[str, tuple[str, ...]]:
        """``name`` (a file name, a flag's value) with each secret in it as ``***``, and the
        kinds of secret it held."""
        clean = verdict("text", name.encode("utf-8", "surrogateescape"))
        if clean in self._verdicts:
            return name, ()
        shown, kinds = self.scanner().redact_name(name)
        if not kinds and shown == name:
            self._verdicts.add(clean)
        return shown, kinds


_flag_scan: ContentScan | None = None


def holds_secret(text: str) -> bool:
    """True if a detector of the content scan finds a secret in ``text`` (a flag's value)."""
    global _flag_scan
    verdicts = clean_verdicts()
    with _verdicts_lock:
        if _flag_scan is None:
            _flag_scan = ContentScan(verdicts)
    return bool(_flag_scan.redact_name(text)[1])
