"""The local Hub's request log and the totals that tests and benchmarks count."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class RequestRecord:
    """One request: ``status`` is None when no answer was sent: the connection was dropped on
    purpose (a scenario's fault), or ``client_gone``: the client hung up while the request was
    read (a release cut short)."""

    method: str
    path: str
    endpoint: str | None
    status: int | None
    request_bytes: int
    client_gone: bool = False


@dataclass(frozen=True)
class Counters:
    """Totals since the Hub started (or since ``RequestLog.clear``)."""

    requests: int
    request_bytes: int
    commits: int
    uploaded_bytes: int
    by_endpoint: dict[str, int]
    by_status: dict[str, int]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RequestLog:
    """Thread-safe: the Hub's event loop writes, tests read from their own thread."""

    records: list[RequestRecord] = field(default_factory=list)
    commits: int = 0
    uploaded_bytes: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, record: RequestRecord) -> None:
        with self._lock:
            self.records.append(record)

    def add_commit(self, content_bytes: int) -> None:
        with self._lock:
            self.commits += 1
            self.uploaded_bytes += content_bytes

    def snapshot(self) -> list[RequestRecord]:
        with self._lock:
            return list(self.records)

    def clear(self) -> None:
        with self._lock:
            self.records.clear()
            self.commits = 0
            self.uploaded_bytes = 0

    def counters(self) -> Counters:
        with self._lock:
            records = list(self.records)
            commits, uploaded = self.commits, self.uploaded_bytes
        return Counters(
            requests=len(records),
            request_bytes=sum(r.request_bytes for r in records),
            commits=commits,
            uploaded_bytes=uploaded,
            by_endpoint=dict(Counter(r.endpoint or "unrouted" for r in records)),
            by_status=dict(
                Counter(
                    str(r.status)
                    if r.status is not None
                    else "client gone"
                    if r.client_gone
                    else "dropped"
                    for r in records
                )
            ),
        )
