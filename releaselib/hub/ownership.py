"""Whether an existing Space at a candidate id is this tool's to write: the one ownership rule.

A candidate is ours only when both hold:

- it is private. A public Space at a candidate id is never written: anyone can make one, and
  deploy would replace its files and publish an unverified candidate. (A candidate the release
  created public, with ``--public``, is written once, when it is created.)
- a commit on its main branch carries the marker deploy writes into every commit's
  description (not its title, which is all a reader sees in a listing): the trailer
  ``Openenv-release-candidate: <space id>``, naming this very Space. A copied title, or a
  Space duplicated from a candidate under another id, does not carry it.

A private Space holding nothing but ``.gitattributes`` is ours as well: a run that created it
stopped before its first commit. Everything else is refused, naming the Space, and nothing is
written there (its files, its visibility).
"""

from __future__ import annotations

from releaselib.hub.client import KEEP_REMOTE, Hub, RemoteFile, RemoteSpace

#: The trailer key of the marker in the description of every commit deploy makes.
MARK_KEY = "Openenv-release-candidate"
#: What a refusal tells the user to do.
FOREIGN_REMEDY = (
    "pick another --suffix (or --repo-id), or delete that Space if it is yours to drop"
)


def ownership_mark(space_id: str) -> str:
    """The marker a deploy commit's description carries for the candidate ``space_id``."""
    return f"{MARK_KEY}: {space_id}"


def foreign(hub: Hub, space: RemoteSpace, remote: dict[str, RemoteFile]) -> str | None:
    """Why the existing Space ``space`` at a candidate id is not this tool's to write, or None
    when it is (see the module's docstring)."""
    if space.private is not True:
        held = "is public" if space.private is False else "may be public (no token to tell)"
        return (
            f"{space.id} exists and {held}; deploy never writes a public Space at a "
            "candidate id (a release's candidates are private)"
        )
    if not set(remote) - KEEP_REMOTE:
        return None
    mark = ownership_mark(space.id)
    if any(mark in body.splitlines() for body in hub.commit_bodies(space.id)):
        return None
    return (
        f"{space.id} exists and no commit of it carries the marker openenv-release writes "
        f"({MARK_KEY}), so it is not a release's candidate (deploy writes only Spaces a "
        "release created)"
    )
