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
#: Each byte as its class: ``p`` printable (tab, line ends, ASCII 0x20-0x7e), ``0`` NUL, ``.``
#: any other. The runs are sought in the classes, at the same offsets: there a pattern starts
#: with a literal, which the regex engine finds fast (4x over a media file's bytes).
CLASSES = bytes(
    ord("p") if b in b"\t\n\r" or 0x20 <= b <= 0x7E else ord("0") if b == 0 else ord(".")
    for b in range(256)
)
ASCII_RUN = re.compile(b"p" * MIN_RUN + b"+")
#: UTF-16 in either byte order: printable ASCII characters each beside a NUL byte.
UTF16_RUN = re.compile(b"p0" * (MIN_RUN - 1) + rb"(?:p0)*p")


def is_media(data: bytes) -> bool:
    """True if ``data`` starts like a known image, video or audio file."""
    return any(data[offset : offset + len(magic)] == magic for offset, magic in MEDIA_MAGIC)


def media_strings(data: bytes) -> str:
    """The printable runs in ``data`` (UTF-16 ones decoded), in file order, each starting on the
    line of the file its first byte is on, and apart from the one before it."""
    classes = data.translate(CLASSES)
    runs: list[tuple[int, int, str]] = []
    for run, step in ((ASCII_RUN, 1), (UTF16_RUN, 2)):  # UTF-16: its every other byte
        for m in run.finditer(classes):
            runs.append((m.start(), m.end(), data[m.start() : m.end() : step].decode("ascii")))
    parts: list[str] = []
    counted = 0  # the line ends before here are in ``parts``
    for start, end, text in sorted(runs):
        more = data.count(b"\n", counted, start) if start > counted else 0
        if parts or more:
            parts.append("\n" * more or " ")
        parts.append(text)
        counted = max(counted, end)
    return "".join(parts)
