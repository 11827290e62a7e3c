"""The texts a file's bytes may hold, for the secret scan: read as UTF-8 with bad bytes replaced
(a binary's strings stay), as UTF-16 when there is a BOM or NUL bytes; gzip, bz2, xz and lzma
content decompressed and every member of a zip file (found by its magic bytes: .whl, .docx,
.xlsx, .npz too) read, nested up to MAX_DEPTH deep and within MAX_UNPACKED bytes per file. A
known image, video or audio file (by its magic bytes too) is read as its printable strings
(``media_strings``)."""

from __future__ import annotations

import bz2
import codecs
import functools
import gzip
import io
import lzma
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any

from releaselib.records import SecretFinding
from releaselib.stage.media_strings import is_media, media_strings

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


def texts(
    data: bytes, rel: str, budget: list[int] | None = None, depth: int = 0
) -> Iterator[str | SecretFinding]:
    """The texts a file's bytes may hold; a SecretFinding for compressed content too big to
    scan (``budget``: the decompressed bytes this file may still unpack)."""
    budget = [MAX_UNPACKED] if budget is None else budget
    if is_media(data):
        yield media_strings(data)
        return
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
