"""The bound on Spaces in flight in the embedded Hub: how many build or run at once.

A Space takes a slot as its build starts (before the builder's own build slot) and gives it
back when its process stops: paused, stopped, deleted, superseded, failed, or asleep. Each
slot belongs to one generation of a Space (a commit or restart starts a new one), so a
generation that was superseded while it waited never takes one, and a late release by an
old generation never frees its successor's.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

#: What one Space in flight may take: a venv Space of a real env runs in about 300-400 MB.
SPACE_MEMORY = 400 * 1024 * 1024


def default_spaces() -> int:
    """The rehearsal's bound unless told: one Space per core (at least 2), no more than the
    available memory holds at :data:`SPACE_MEMORY` each (at least 1)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(max(2, cores or 1), max(1, _available_memory() // SPACE_MEMORY))


def _available_memory() -> int:
    """MemAvailable from /proc/meminfo, else free physical pages (other systems)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


class InFlight:
    """At most ``limit`` Spaces in flight (None: no bound), and the most there ever were."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self.peak = 0
        self._holders: dict[str, int] = {}  # Space id -> the generation holding its slot
        self._newest: dict[str, int] = {}  # Space id -> the newest generation announced
        self._changed = threading.Condition()

    @property
    def held(self) -> int:
        with self._changed:
            return len(self._holders)

    def take(self, space: str, generation: int) -> bool:
        """Wait for a slot for ``space``'s ``generation``; False, holding nothing, as soon as
        a newer generation of it began (:meth:`moved_on`)."""
        with self._changed:
            while True:
                if self._newest.get(space, generation) > generation:
                    return False
                if self.limit is None or len(self._holders) < self.limit:
                    self._holders[space] = generation
                    self.peak = max(self.peak, len(self._holders))
                    return True
                self._changed.wait()

    def moved_on(self, space: str, generation: int) -> None:
        """``space``'s ``generation`` began and its older process stopped: an older
        generation's slot is free, and an older generation still waiting gives up."""
        with self._changed:
            self._newest[space] = max(self._newest.get(space, generation), generation)
            if self._holders.get(space, generation) < generation:
                del self._holders[space]
            self._changed.notify_all()

    def release(self, space: str, generation: int) -> None:
        """``space``'s ``generation`` stopped (or never started) its process: free its slot
        if it holds one."""
        with self._changed:
            if self._holders.get(space) == generation:
                del self._holders[space]
                self._changed.notify_all()
