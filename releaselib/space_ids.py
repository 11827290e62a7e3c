"""Space ids that say what they are, so a candidate can never be a canonical Space.

- ``CandidateId``: a release candidate, ``<namespace>/<env><suffix>`` with a non-empty suffix.
  Deploy, verify, recover, cleanup and collection act on these.
- ``CanonicalId``: an unsuffixed Space an env is published into. Only ``promote`` builds one
  (tests/test_space_ids.py checks that no other module names it).
- ``Canonicals``: every canonical Space id of a release (each env's ``<namespace>/<env>`` and
  every target a plugin declares), the fence deploy checks each of its targets against.

Both ids are ``str`` (the Hub facade takes them as they are), but neither can be built with a
plain call: ``CandidateId("openenv/echo_env")`` is a TypeError. Use the class methods.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Self

from releaselib.errors import UsageError
from releaselib.records import REPO_NAME, SPACE_ID

_SEAL = object()


def check_suffix(suffix: str, where: str | None = None) -> str:
    """``suffix`` if it makes candidate names distinct from canonical ones, else UsageError
    naming ``where`` it came from (e.g. ``--suffix ''``)."""
    where = where or f"suffix {suffix!r}"
    if not suffix.strip():
        raise UsageError(
            f"{where}: a candidate Space needs a non-empty suffix (without one it would be the "
            "canonical Space, which only promote writes)",
            remedy="pass e.g. --suffix -0.2.2, or leave the suffix unset for -<version>",
        )
    if not SPACE_ID.match(f"x/x{suffix}"):
        raise UsageError(f"{where} would make an invalid Space name", remedy="use e.g. -0.2.2")
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
    """Every canonical Space id a release knows; deploy refuses to write any of them."""

    ids: frozenset[str]

    @classmethod
    def of(cls, namespace: str, envs: Iterable[str], targets: Iterable[str]) -> Canonicals:
        """``<namespace>/<env>`` for each env found and ``<namespace>/<repo>`` for each
        canonical repo a plugin declares."""
        return cls(frozenset(f"{namespace}/{name}" for name in (*envs, *targets)))

    def refuse(self, space_id: str, what: str | None = None) -> None:
        """UsageError when ``space_id`` is a canonical Space (no flag overrides this)."""
        if space_id in self.ids:
            raise UsageError(
                f"{what or space_id}: {space_id} is a canonical Space; deploy writes only "
                "version-suffixed candidates, and only promote writes canonical Spaces",
                remedy="deploy a candidate, verify it, then run promote",
            )
