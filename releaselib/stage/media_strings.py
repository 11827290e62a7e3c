"""Known media files (images, video, audio), found by their magic bytes, never by their names,
and the text their bytes may hold for the secret scan: every run of printable ASCII, and of
UTF-16 (either byte order), at least MIN_RUN characters long, each on the line of the file it
starts on. A token hidden in a PNG text chunk, a GIF comment or a video's metadata is such a
run; the rest of a media file is compressed pixels and samples, whose decodings as UTF-8 and
twice as UTF-16 (three texts the size of the file) are what made scanning one slow.
"""

from __future__ import annotations

import re

#: (offset, magic bytes) of the media formats whose content is scanned as its strings.
MEDIA_MAGIC: tuple[tuple[int, bytes], ...] = (
    (0, b"\x89PNG\r\n\x1a\n"),
    (0, b"GIF87a"),
    (0, b"GIF89a"),
    (0, b"\xff\xd8\xff"),  # JPEG
    (8, b"WEBP"),  # RIFF....WEBP
    (4, b"ftyp"),  # ISO base media: MP4, MOV, M4A, HEIC, AVIF
    (0, b"\x1a\x45\xdf\xa3"),  # Matroska, WebM
    (0, b"OggS"),
    (0, b"fLaC"),
)
#: The shortest run kept: no detector reports a secret shorter (``://a:b@c`` is 8). A run goes on
#: over line ends, so a text chunk of several lines (a ``.netrc`` entry) stays whole.
MIN_RUN = 8
ASCII_RUN = re.compile(rb"[\t\n\r\x20-\x7e]{%d,}" % MIN_RUN)
#: UTF-16 in either byte order: printable ASCII characters each beside a NUL byte.
UTF16_RUN = re.compile(rb"(?:[\t\n\r\x20-\x7e]\x00){%d,}[\t\n\r\x20-\x7e]" % (MIN_RUN - 1))


def is_media(data: bytes) -> bool:
    """True if ``data`` starts like a known image, video or audio file."""
    return any(data[offset : offset + len(magic)] == magic for offset, magic in MEDIA_MAGIC)


def media_strings(data: bytes) -> str:
    """The printable runs in ``data`` (UTF-16 ones decoded), in file order, each starting on the
    line of the file its first byte is on, and apart from the one before it."""
    runs = [(m.start(), m.end(), m.group().decode("ascii")) for m in ASCII_RUN.finditer(data)]
    runs += [(m.start(), m.end(), m.group()[::2].decode("ascii")) for m in UTF16_RUN.finditer(data)]
    parts: list[str] = []
    counted = 0  # the line ends before here are in ``parts``
    for start, end, text in sorted(runs):
        more = data.count(b"\n", counted, start) if start > counted else 0
        if parts or more:
            parts.append("\n" * more or " ")
        parts.append(text)
        counted = max(counted, end)
    return "".join(parts)
