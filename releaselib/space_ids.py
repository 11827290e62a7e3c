"""Space ids that say what they are, so a candidate can never be a canonical Space.

- ``CandidateId``: a release candidate, ``<namespace>/<env><suffix>`` with a non-empty suffix.
  Deploy, verify, recover, cleanup and collection act on these.
- ``CanonicalId``: an unsuffixed Space an env is published into. Only ``promote`` builds one
  (tests/test_space_ids.py checks that no other module names it).
- ``Canonicals``: every canonical Space name of a release (each env's name and every target a
  plugin declares, in any namespace, without case), the fence deploy checks its targets against.

Both ids are ``str`` (the Hub facade takes them as they are), but neither can be built with a
plain call: ``CandidateId("openenv/echo_env")`` is a TypeError. Use the class methods.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Self

from releaselib.errors import UsageError
from releaselib.records import REPO_NAME, SPACE_ID

_SEAL = object()


SUFFIX = re.compile(r"^-[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")


def refuse_token(flag: str, value: object) -> None:
    """UsageError when ``value`` (a release-tuple value or a path flag) holds a secret, by the
    detectors the content scan uses; the message names ``flag``, never the value."""
    if value is None:
        return
    from releaselib.stage.scan_cache import holds_secret

    if holds_secret(str(value)):
        raise UsageError(
            f"{flag}: the value looks like a token (not printed, not used)",
            remedy=f"pass the intended {flag}; keep the token in HF_TOKEN, and revoke it if it "
            "was shared",
        )


def check_suffix(suffix: str, where: str | None = None) -> str:
    """``suffix`` if it makes candidate names distinct from canonical ones, else UsageError
    naming ``where`` it came from (e.g. ``--suffix ''``).

    A suffix starts with ``-`` (``-0.2.2``): env names use ``_``, so ``<env><suffix>`` can never
    spell another env's canonical Space (``_env`` on env ``echo`` would be ``echo_env``)."""
    refuse_token("the suffix", suffix)
    where = where or f"suffix {suffix!r}"
    if not suffix.strip():
        raise UsageError(
            f"{where}: a candidate Space needs a non-empty suffix (without one it would be the "
            "canonical Space, which only promote writes)",
            remedy="pass e.g. --suffix -0.2.2, or leave the suffix unset for -<version>",
        )
    if not SUFFIX.match(suffix) or "--" in suffix or ".." in suffix:
        raise UsageError(
            f"{where}: a suffix starts with '-' and ends with a letter or digit, with no "
            "'--' or '..' (the Hub's rules for a Space name)",
            remedy="use e.g. --suffix -0.2.2",
        )
    return suffix


class _SpaceId(str):
    """An ``owner/name`` Space id; built only through a subclass's class methods."""

    __slots__ = ()

    def __new__(cls, value: str, seal: object = None) -> Self:
        if seal is not _SEAL:
            raise TypeError(f"build a {cls.__name__} with its class methods, not {cls.__name__}()")
        if not SPACE_ID.match(value):
            raise ValueError(f"{value!r} is not a Space id (owner/name)")
        return super().__new__(cls, value)

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: Any) -> Self:
        return self

    @property
    def namespace(self) -> str:
        return self.partition("/")[0]

    @property
    def name(self) -> str:
        return self.partition("/")[2]


class CandidateId(_SpaceId):
    """A release candidate's Space id: always ``<namespace>/<env><suffix>``, suffix non-empty."""

    __slots__ = ()

    @classmethod
    def of(cls, namespace: str, env: str, suffix: str) -> CandidateId:
        return cls(f"{namespace}/{env}{check_suffix(suffix)}", _SEAL)

    @classmethod
    def parse(cls, space_id: str, suffix: str) -> CandidateId | None:
        """``space_id`` (from a listing, the ledger or a flag) as a candidate of the release
        with ``suffix``, or None when its name is not ``<env><suffix>``."""
        namespace, _, name = space_id.partition("/")
        env = name.removesuffix(check_suffix(suffix))
        if env == name or not env or not SPACE_ID.match(space_id):
            return None
        return cls.of(namespace, env, suffix)

    @classmethod
    def given(cls, repo_id: str, fence: Canonicals) -> CandidateId:
        """``--repo-id``: any ``owner/name`` that is not a canonical Space."""
        refuse_token("--repo-id", repo_id)
        if not SPACE_ID.match(repo_id):
            raise UsageError(
                f"--repo-id {repo_id!r} is not owner/name",
                remedy="e.g. --repo-id openenv/echo_env-0.2.2",
            )
        fence.refuse(repo_id, f"--repo-id {repo_id}")
        return cls(repo_id, _SEAL)


class CanonicalId(_SpaceId):
    """A canonical Space's id, ``<namespace>/<repo>``; only promote builds one."""

    __slots__ = ()

    @classmethod
    def of(cls, namespace: str, repo: str) -> CanonicalId:
        if not REPO_NAME.match(repo):
            raise ValueError(f"canonical repo {repo!r} must be a bare repo name")
        return cls(f"{namespace}/{repo}", _SEAL)


@dataclass(frozen=True)
class Canonicals:
    """The canonical Space names a release knows; deploy refuses to write any of them."""

    names: frozenset[str]

    @classmethod
    def of(cls, envs: Iterable[str], targets: Iterable[str]) -> Canonicals:
        """Each env's name and each canonical repo a plugin declares, compared without case
        (the Hub's repo ids are case-insensitive)."""
        return cls(frozenset(name.lower() for name in (*envs, *targets)))

    def refuse(self, space_id: str, what: str | None = None) -> None:
        """UsageError when ``space_id`` names a canonical Space, in any namespace: a flag such
        as ``--namespace`` must not move the fence (no flag overrides this)."""
        if space_id.partition("/")[2].lower() in self.names:
            raise UsageError(
                f"{what or space_id}: {space_id} is a canonical Space; deploy writes only "
                "version-suffixed candidates, and only promote writes canonical Spaces",
                remedy="deploy a candidate, verify it, then run promote",
            )
