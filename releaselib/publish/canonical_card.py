"""The README a canonical Space gets on promotion: the release's card fields over its own card.

The release owns the metadata keys its card sets (title, sdk, app_port, ...) and, among tags,
its own (``openenv``, the hub tag, ``openenv-<version>``) and every older release's version tag.
The canonical keeps every other key (``license``, ``models:``, ...), its other tags (after the
release's) and its body. Merged through the Hub's own card classes (``SpaceCard``).
"""

from __future__ import annotations

import re
from typing import Any

from huggingface_hub import SpaceCard, SpaceCardData
from packaging.version import InvalidVersion, Version

#: A version tag some release of this tool wrote: ``openenv-0.2.1``, ``openenv-v0.3.0``.
RELEASE_TAG = re.compile(r"^openenv-v?\d")


def merged_card(release_card: str, held: str | None) -> str:
    """``release_card`` merged into the canonical's current README ``held`` (None: it has
    none, so the release's card is the whole README)."""
    if held is None:
        return release_card
    ours, theirs = SpaceCard(release_card), SpaceCard(held)
    data, mine = _fields(theirs), _fields(ours)
    tags = [str(t) for t in mine.get("tags") or []]
    kept = [
        t
        for t in (str(t) for t in data.get("tags") or [])
        if t not in tags and not RELEASE_TAG.match(t)
    ]
    data.update(mine)
    if tags or kept:
        data["tags"] = tags + kept
    theirs.data = SpaceCardData(**data)
    if not theirs.text.strip():
        theirs.text = ours.text
    return str(theirs)


def held_release(held: str | None) -> Version | None:
    """The newest release a canonical's README ``held`` says it holds (its ``openenv-<V>``
    tags, which every release's card carries); None when it names none."""
    if held is None:
        return None
    found = []
    for tag in (str(t) for t in _fields(SpaceCard(held)).get("tags") or []):
        if RELEASE_TAG.match(tag):
            try:
                found.append(Version(tag.removeprefix("openenv-")))
            except InvalidVersion:
                continue
    return max(found, default=None)


def _fields(card: SpaceCard) -> dict[str, Any]:
    """The card's metadata as a dict (``CardData.to_dict`` is untyped)."""
    return dict(card.data.to_dict())  # type: ignore[no-untyped-call]
