"""The bounds on Spaces in flight in the embedded Hub: how many build or start at once, and how
many are in flight in all.

Building and starting are what load the machine (an install, a server importing its
framework); a Space that runs and answers probes mostly waits. So a Space takes a slot as its
build starts (before the builder's own build slot) and is *starting* until its process
answers: only ``limit`` Spaces start at once. It keeps a place among those in flight until its
process stops (paused, stopped, deleted, superseded, failed, or asleep): at most ``running``
in all (:func:`running_spaces`: twice ``limit``, within memory), since a Space being probed
runs code too. Slots are taken in the order they were asked for, so the Spaces of a release
start in the order they were deployed; a restart (a new variable or secret, a factory reboot,
a sleeping Space woken) asks again, at the back.
Each slot belongs to one generation of a Space (a commit or restart starts a new one), so a
generation that was superseded while it waited never takes one, and a late release by an old
generation never frees its successor's. A Space's process that stops of itself is noticed when
its runtime is next read.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import deque
from pathlib import Path

#: What one Space in flight may take: a venv Space of a real env runs in about 300-400 MB.
SPACE_MEMORY = 400 * 1024 * 1024


def default_spaces() -> int:
    """The rehearsal's bound on Spaces starting at once unless told: one per core (at least
    2), no more than :func:`memory_spaces`."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    held = memory_spaces()
    return max(2, cores or 1) if held is None else min(max(2, cores or 1), held)


def running_spaces(limit: int) -> int:
    """How many Spaces may be in flight in all when ``limit`` may start at once: twice that
    (a Space being probed runs its env's code too, and some start worker processes after their
    port opens), no more than :func:`memory_spaces`."""
    held = memory_spaces()
    return 2 * limit if held is None else max(1, min(2 * limit, held))


def memory_spaces() -> int | None:
    """How many Spaces the available memory holds at :data:`SPACE_MEMORY` each (at least 1);
    None when this system does not say how much memory is available."""
    available = _available_memory()
    return None if available is None else max(1, available // SPACE_MEMORY)


def _available_memory() -> int | None:
    """MemAvailable from /proc/meminfo, else free physical pages; None where the system says
    neither (macOS has no SC_AVPHYS_PAGES). A container's memory limit is not read (a
    rehearsal pauses each Space once judged, so few run at once beyond those starting)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


class InFlight:
    """At most ``limit`` Spaces starting (None: no bound) and ``running`` in flight in all
    (None: no bound), and the most there ever were of each (``peak_starting``, ``peak``)."""

    def __init__(self, limit: int | None = None, running: int | None = None) -> None:
        self.limit = limit
        self.running = running
        self.peak = 0
        self.peak_starting = 0
        self._holders: dict[str, int] = {}  # Space id -> the generation holding its slot
        self._starting: set[str] = set()  # the holders whose process does not answer yet
        self._newest: dict[str, int] = {}  # Space id -> the newest generation announced
        self._waiting: deque[int] = deque()  # the tickets of those waiting, first asked first
        self._tickets = itertools.count()
        self._changed = threading.Condition()

    @property
    def held(self) -> int:
        with self._changed:
            return len(self._holders)

    @property
    def starting(self) -> int:
        with self._changed:
            return len(self._starting)

    def newest(self, space: str) -> int:
        """The newest generation of ``space`` announced (0: none), which a Space created
        again after a deletion goes on from."""
        with self._changed:
            return self._newest.get(space, 0)

    @property
    def queued(self) -> int:
        """How many wait for a slot."""
        with self._changed:
            return len(self._waiting)

    def take(self, space: str, generation: int) -> bool:
        """Wait for a slot for ``space``'s ``generation`` to start in, after those who asked
        before; False, holding nothing, as soon as a newer generation of it began
        (:meth:`moved_on`)."""
        with self._changed:
            ticket = next(self._tickets)
            self._waiting.append(ticket)
            while True:
                if self._newest.get(space, generation) > generation:
                    self._waiting.remove(ticket)
                    self._changed.notify_all()  # the next in line may be first now
                    return False
                if self._waiting[0] == ticket and self._free():
                    self._waiting.popleft()
                    self._changed.notify_all()
                    self._holders[space] = generation
                    self._starting.add(space)
                    self.peak = max(self.peak, len(self._holders))
                    self.peak_starting = max(self.peak_starting, len(self._starting))
                    return True
                self._changed.wait()

    def started(self, space: str, generation: int) -> None:
        """``space``'s ``generation`` answers: it keeps its place in flight, and its starting
        slot goes to the next Space."""
        with self._changed:
            if self._holders.get(space) == generation and space in self._starting:
                self._starting.discard(space)
                self._changed.notify_all()

    def moved_on(self, space: str, generation: int) -> None:
        """``space``'s ``generation`` began and its older process stopped: an older
        generation's slot is free, and an older generation still waiting gives up."""
        with self._changed:
            self._newest[space] = max(self._newest.get(space, generation), generation)
            if self._holders.get(space, generation) < generation:
                self._drop(space)
            self._changed.notify_all()

    def release(self, space: str, generation: int) -> None:
        """``space``'s ``generation`` stopped (or never started) its process: free its slot
        if it holds one."""
        with self._changed:
            if self._holders.get(space) == generation:
                self._drop(space)
                self._changed.notify_all()

    def _free(self) -> bool:
        starts = self.limit is None or len(self._starting) < self.limit
        return starts and (self.running is None or len(self._holders) < self.running)

    def _drop(self, space: str) -> None:
        del self._holders[space]
        self._starting.discard(space)
