"""Scenarios: how the local Hub misbehaves, as data (a YAML/JSON file or Python objects).

Example file::

    build_seconds: 0.2
    faults:
      - endpoint: preupload        # a route name (see ``hubapi.ROUTE_NAMES``), or
        path: /api/spaces/*        # an fnmatch pattern on the URL path, and/or
        method: POST               # a method; unset keys match everything
        status: 429                # answer this status instead...
        retry_after: 0             # ...with this Retry-After header
        body: "<html>...</html>"   # answer this body (status 200 unless given)...
        content_type: text/html    # ...of this type, instead of a JSON error
        delay: 0.5                 # answer this many seconds late
        drop: false                # close the connection without answering
        count: 1                   # apply to the first N matching requests, or
        fraction: 0.5              # to this share of them (every 2nd), else to all
    spaces:
      - repo: acme/broken-*        # fnmatch pattern on the Space id
        build_error: "pip failed"  # every build ends in BUILD_ERROR
        stale_build_error: "old"   # BUILD_ERROR until a factory restart
        stuck_starting: true       # stays APP_STARTING
        sleeping: true             # goes to SLEEPING once running; wakes on a domain request
        domains: 2                 # how many domains the Space has
        first_domain_404: true     # the first domain answers 404
"""

from __future__ import annotations

import fnmatch
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

import yaml

from releaselib.errors import UsageError

_Record = TypeVar("_Record", "Fault", "SpaceBehaviour")


@dataclass(frozen=True)
class Fault:
    """A misbehaviour for the requests it matches (``status``/``body``, ``delay``, ``drop``)."""

    endpoint: str | None = None
    path: str | None = None
    method: str | None = None
    status: int | None = None
    retry_after: float | None = None
    body: str | None = None
    content_type: str = "text/html"
    delay: float = 0.0
    drop: bool = False
    count: int | None = None
    fraction: float | None = None

    def matches(self, method: str, path: str, endpoint: str | None) -> bool:
        return (
            (self.method is None or self.method.upper() == method)
            and (self.path is None or fnmatch.fnmatchcase(path, self.path))
            and (self.endpoint is None or self.endpoint == endpoint)
        )

    def applies_to(self, nth: int) -> bool:
        """Whether the ``nth`` (1-based) matching request gets this fault."""
        if self.count is not None:
            return nth <= self.count
        if self.fraction is not None:
            return math.floor(nth * self.fraction) > math.floor((nth - 1) * self.fraction)
        return True


@dataclass(frozen=True)
class SpaceBehaviour:
    """How the Spaces whose id matches ``repo`` build and run."""

    repo: str = "*"
    build_error: str | None = None
    stale_build_error: str | None = None
    stuck_starting: bool = False
    sleeping: bool = False
    domains: int = 1
    first_domain_404: bool = False


@dataclass(frozen=True)
class Scenario:
    """Faults for HTTP requests and behaviours for Spaces; the default is a healthy Hub."""

    faults: tuple[Fault, ...] = ()
    spaces: tuple[SpaceBehaviour, ...] = ()
    build_seconds: float = 0.1

    @classmethod
    def load(cls, path: Path) -> Scenario:
        """Read a scenario from a YAML or JSON file; UsageError naming it if it cannot be read."""
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise UsageError(
                f"scenario {path}: {reason}",
                remedy="pass --scenario a readable YAML/JSON scenario file",
            ) from None
        if not isinstance(data, Mapping):
            raise UsageError(f"scenario {path} is not a mapping")
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "scenario") -> Scenario:
        unknown = set(data) - {"faults", "spaces", "build_seconds"}
        if unknown:
            raise UsageError(f"{source}: unknown keys {sorted(unknown)}")
        return cls(
            faults=tuple(_record(Fault, item, source) for item in data.get("faults", ())),
            spaces=tuple(_record(SpaceBehaviour, item, source) for item in data.get("spaces", ())),
            build_seconds=float(data.get("build_seconds", 0.1)),
        )

    def space(self, repo_id: str) -> SpaceBehaviour:
        """The first behaviour whose pattern matches ``repo_id``, else the healthy default."""
        for behaviour in self.spaces:
            if fnmatch.fnmatchcase(repo_id, behaviour.repo):
                return behaviour
        return SpaceBehaviour(repo=repo_id)


def _record(kind: type[_Record], item: Any, source: str) -> _Record:
    names = {f.name for f in fields(kind)}
    if not isinstance(item, Mapping) or set(item) - names:
        raise UsageError(f"{source}: {item!r} is not a {kind.__name__} (keys: {sorted(names)})")
    return kind(**item)


@dataclass
class FaultInjector:
    """Counts matching requests per fault and says which fault, if any, the next one gets."""

    faults: tuple[Fault, ...]
    _seen: dict[int, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def decide(self, method: str, path: str, endpoint: str | None) -> Fault | None:
        with self._lock:
            for index, fault in enumerate(self.faults):
                if fault.matches(method, path, endpoint):
                    self._seen[index] = self._seen.get(index, 0) + 1
                    if fault.applies_to(self._seen[index]):
                        return fault
        return None

    def swap(
        self, faults: tuple[Fault, ...], seen: dict[int, int] | None = None
    ) -> tuple[tuple[Fault, ...], dict[int, int]]:
        """Inject ``faults`` from now on, counted from ``seen`` (afresh by default); return the
        faults injected until now with their counts, to hand back to a later swap."""
        with self._lock:
            before = self.faults, self._seen
            self.faults, self._seen = faults, dict(seen or {})
        return before
