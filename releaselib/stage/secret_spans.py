"""Secrets as spans of a text: a ``Hit`` per line a secret covers, and the secrets that span
lines, which a scan line by line misses: a token split over a line continuation (``ENV
HF_TOKEN=hf_abc\\`` then ``def...``), over adjacent string literals (``"hf_abc" "def..."``,
Python's implicit concatenation, on one line or several), and a ``.netrc`` entry written over
several lines."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from releaselib.stage import token_detectors

NEWLINE = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Hit:
    """A secret in a text: its line (from 1), kind and value, and the span of that line it
    covers (the whole token, or the base64 literal that hides it). A secret over several lines
    has a hit per line; all but the first are ``continued`` (redacted, never reported)."""

    line: int
    kind: str
    value: str
    start: int
    end: int
    continued: bool = False


#: A line continuation (shell, Dockerfile): the backslash, the newline, the next line's indent.
CONTINUATION = re.compile(r"\\(?:\r\n|\r|\n)[ \t]*")

#: Where two adjacent string literals with the same quote meet (``"hf_abc" "def"``, across a
#: line continuation or a newline inside brackets too): the closing quote, the blanks, the
#: opening quote. Removing it joins the two literals into one.
LITERAL_JOIN = re.compile(r"""(?P<q>["'])(?:[ \t]|\\(?:\r\n|\r|\n)|\r\n|\r|\n)+(?P=q)""")

#: What ``_joined`` removes: line continuations, and the seams of adjacent string literals.
JOINS = re.compile(f"{LITERAL_JOIN.pattern}|{CONTINUATION.pattern}")


def multiline_hits(text: str, line_hits: Callable[[str], list[Hit]]) -> list[Hit]:
    """Secrets that span lines or literals of ``text``: tokens found once its line continuations
    and adjacent string literals are joined, and ``.netrc`` passwords whose ``machine`` is on an
    earlier line, each as hits on the lines of ``text`` it covers."""
    spans: list[tuple[str, str, int, int]] = []
    if JOINS.search(text):
        joined, origin = _joined(text)
        hits = line_hits(joined)
        starts = [0, *(m.end() for m in NEWLINE.finditer(joined))] if hits else []
        for hit in hits:
            at = starts[hit.line - 1]
            first, last = origin[at + hit.start], origin[at + hit.end - 1] + 1
            if last - first != hit.end - hit.start:  # a join inside: the line scan missed it
                spans.append((hit.kind, hit.value, first, last))
    for start, end in token_detectors.netrc_passwords(text):
        spans.append(
            (token_detectors.NetrcPasswordDetector.secret_type, text[start:end], start, end)
        )
    return [h for span in spans for h in _line_pieces(text, *span)]


def _joined(text: str) -> tuple[str, list[int]]:
    """``text`` with its line continuations and literal seams removed, and the index in ``text``
    of each character of the result (one more entry: the end)."""
    out: list[str] = []
    origin: list[int] = []
    done = 0
    for match in [*JOINS.finditer(text), None]:
        stop = match.start() if match else len(text)
        out.append(text[done:stop])
        origin += range(done, stop)
        done = match.end() if match else stop
    return "".join(out), [*origin, len(text)]


def _line_pieces(text: str, kind: str, value: str, start: int, end: int) -> Iterator[Hit]:
    """A hit per line of ``text`` that ``start:end`` covers, the first not ``continued``."""
    starts = [0, *(m.end() for m in NEWLINE.finditer(text))]
    first = bisect.bisect_right(starts, start)
    for number in range(first, bisect.bisect_right(starts, end - 1) + 1):
        line_start = starts[number - 1]
        line_end = NEWLINE.search(text, line_start)
        stop = line_end.start() if line_end else len(text)
        yield Hit(
            number,
            kind,
            value,
            max(start, line_start) - line_start,
            min(end, stop) - line_start,
            continued=number != first,
        )


def covered(hit: Hit, found: list[Hit]) -> bool:
    return any(f.line == hit.line and f.start <= hit.start < f.end for f in found)
