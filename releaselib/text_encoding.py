"""Text files that must be UTF-8: decoded, or a one-line error naming the file and the
encoding it appears to be in (charset-normalizer's guess, a BOM first)."""

from __future__ import annotations

import codecs
from pathlib import Path

from charset_normalizer import from_bytes

from releaselib.errors import StageError

#: Byte-order marks and what they say, longest first (UTF-32's LE mark starts with UTF-16's).
_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32 LE"),
    (codecs.BOM_UTF32_BE, "UTF-32 BE"),
    (codecs.BOM_UTF16_LE, "UTF-16 LE"),
    (codecs.BOM_UTF16_BE, "UTF-16 BE"),
)


def encoding_found(data: bytes) -> str:
    """What ``data`` appears to be encoded in: its byte-order mark, else charset-normalizer's
    best guess, else "an unknown encoding"."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return f"{name} (with a byte-order mark)"
    best = from_bytes(data).best()
    return best.encoding if best is not None else "an unknown encoding"


def utf8_text(path: Path, shown: str) -> str:
    """``path``'s text; a StageError naming it as ``shown`` and its encoding when not UTF-8."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StageError(
            f"{shown}: not UTF-8 (byte {exc.start}; it looks like {encoding_found(data)})",
            remedy=f"save {shown} as UTF-8 in the checkout, then deploy again",
        ) from None
