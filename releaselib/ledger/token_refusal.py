"""What the ledger never writes: a Hub token, in any key or string of a record."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from releaselib.errors import HF_TOKEN_RE, TOKEN_VARS


def refuse_tokens(value: Any, *, where: str) -> None:
    """ValueError if any key or string in ``value`` holds a Hub token; never says the token."""
    secrets = [os.environ.get(name, "") for name in TOKEN_VARS]
    for path, text in _strings(value, where):
        if HF_TOKEN_RE.search(text) or any(_holds(text, secret) for secret in secrets):
            raise ValueError(f"refusing to write a Hub token to the ledger (at {path})")


def _holds(text: str, secret: str) -> bool:
    """True if ``text`` is ``secret`` or, for a secret long enough not to match by chance,
    contains it."""
    return bool(secret) and (text == secret or (len(secret) >= 8 and secret in text))


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string in a JSON-like value (keys included), with where it sits."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(key, f"{path}.<key>")
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")
