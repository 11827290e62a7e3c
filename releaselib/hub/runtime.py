"""Wait for candidate Spaces to reach a terminal stage, triage them, and recover stuck ones.

Each poll cycle reads one ``list_spaces(author, expand=runtime)`` per author that still has a
Space on its way, however many Spaces are watched. RUNNING and SLEEPING are ready to probe;
BUILD_ERROR, RUNTIME_ERROR, CONFIG_ERROR and NO_APP_FILE are failures, and so are PAUSED and
STOPPED, which never change by themselves. A stage is evidence only for the commit the runtime
reports: a ready or failed stage whose runtime sha is not the Space's head (what was deployed)
is *stale* (the Hub still shows the build from before the push), so the watcher polls again
and, if it stays stale, factory-reboots it once, as :func:`recover` does, before judging.
:func:`recover` factory-reboots a stale BUILD_ERROR or a stuck APP_STARTING, recreates a Space
when allowed, and names the known signature of a failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Literal

from releaselib.config import ReleaseConfig
from releaselib.errors import HubError
from releaselib.hub.client import Hub, RemoteSpace
from releaselib.hub.deploy import deploy_one
from releaselib.records import Signature, StagedSpace
from releaselib.space_ids import Canonicals

READY = frozenset({"RUNNING", "SLEEPING"})
FAILED = frozenset(
    {"BUILD_ERROR", "RUNTIME_ERROR", "CONFIG_ERROR", "NO_APP_FILE", "PAUSED", "STOPPED"}
)
#: Stages whose runtime sha must be the head to count: the ones a verdict is drawn from.
JUDGED = READY | {"BUILD_ERROR", "RUNTIME_ERROR"}
#: Polls in a row a Space may look stale before the watcher factory-reboots it (once).
STALE_POLLS = 3
#: How many waits a watch of Spaces queued behind other builds may take in all.
QUEUED_WAITS = 8
NOT_FOUND = "not found on the Hub (or private and the token cannot see it)"
TAIL_LINES = 12
#: How the embedded Hub's builders begin an error line that is their own doing (no OpenEnv
#: checkout at the pinned commit, say), not the Space's evidence.
BUILDER_MADE = "embedded Hub builder:"


@dataclass(frozen=True)
class Domain:
    """One runtime domain of a Space and its stage (``READY`` when it serves)."""

    name: str
    stage: str


def _redacted(text: str) -> str:
    """A Space's own error text with each secret in it redacted, before anything shows it."""
    if not text:
        return text
    from releaselib.stage.secretscan import redact_secrets  # detect-secrets is slow to import

    return redact_secrets(text)


@dataclass(frozen=True)
class SpaceState:
    """What one listing said about a Space; ``seen_at`` is seconds after watching began."""

    space_id: str
    stage: str | None  # None: the listing did not have it
    sha: str | None
    error: str | None
    domains: tuple[Domain, ...] = ()
    hardware: str | None = None
    seen_at: float = 0.0
    head: str | None = None  # the Space's head commit: what was deployed
    #: the embedded Hub's builder that stood in for the Space's build (its runtime's
    #: ``localhubBuilder``); None on a real Hub
    builder: str | None = None
    #: the embedded Hub's build is waiting for a builder slot (``localhubQueued``); a real Hub
    #: does not say, so its Spaces count as started when first seen
    queued: bool = False

    @classmethod
    def of(cls, space_id: str, remote: RemoteSpace | None, seen_at: float) -> SpaceState:
        if remote is None:
            return cls(space_id, None, None, NOT_FOUND, seen_at=seen_at)
        runtime = remote.runtime
        domains = tuple(
            Domain(str(d["domain"]), str(d.get("stage") or ""))
            for d in runtime.get("domains") or ()
            if isinstance(d, Mapping) and d.get("domain")
        )
        return cls(
            space_id,
            remote.stage,
            str(runtime.get("sha") or remote.sha or "") or None,
            _redacted(str(runtime.get("errorMessage") or "")) or None,
            domains,
            _hardware(runtime.get("hardware")),
            seen_at,
            remote.sha,
            str(runtime.get("localhubBuilder") or "") or None,
            runtime.get("localhubQueued") is True,
        )

    @property
    def ready(self) -> bool:
        return self.stage in READY

    @property
    def failed(self) -> bool:
        return self.stage is None or self.stage in FAILED

    @property
    def stale(self) -> bool:
        """A ready or failed stage the runtime reports for another commit than the head."""
        return self.stage in JUDGED and None not in (self.sha, self.head) and self.sha != self.head

    @property
    def terminal(self) -> bool:
        """Ready or failed, for the head commit: a stage a verdict may be drawn from."""
        return (self.ready or self.failed) and not self.stale

    @property
    def builder_made(self) -> bool:
        """A failure the embedded Hub's builder made itself (``BUILDER_MADE``)."""
        return self.builder is not None and BUILDER_MADE in self.error_tail(1)

    def error_tail(self, lines: int = TAIL_LINES) -> str:
        """The last ``lines`` lines of the errorMessage."""
        return "\n".join((self.error or "").strip().splitlines()[-lines:])


def _hardware(value: Any) -> str | None:
    if isinstance(value, Mapping):
        value = value.get("current") or value.get("requested")
    return str(value) if value else None


@dataclass(frozen=True)
class Poll:
    """The state of every watched Space after one cycle; ``final`` on the last one."""

    cycle: int
    elapsed: float
    states: Mapping[str, SpaceState]
    listings: int  # Hub requests this cycle: one per author with a Space on its way
    final: bool

    @property
    def pending(self) -> list[str]:
        return [sid for sid, state in self.states.items() if not state.terminal]


def common_suffix(names: Iterable[str]) -> str | None:
    """The longest common ending of ``names``, the Hub listing's ``search``; None if empty."""
    ending: str | None = None
    for name in names:
        if ending is None:
            ending = name
        while ending and not name.endswith(ending):
            ending = ending[1:]
    return ending or None


def watch(
    hub: Hub,
    space_ids: Sequence[str],
    *,
    wait: float,
    interval: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    on_stale: Literal["reboot", "accept"] = "reboot",
) -> Iterator[Poll]:
    """Poll until every Space is terminal or has had ``wait`` seconds since it started; yield
    each cycle. A Space starts when it is first seen out of the embedded Hub's build queue (a
    real Hub does not report a queue: when it is first seen), so a Space queued behind other
    builds loses none of its wait; :data:`QUEUED_WAITS` waits bound the whole watch.

    A Space's state stops changing once it is terminal (it is the caller's to act on). A stale
    one is polled again; after :data:`STALE_POLLS` stale polls in a row it is factory-rebooted
    once; still stale when ``wait`` ends, it is not terminal. With ``on_stale="accept"`` a
    stale Space is final as it is (the caller triages it, as :func:`recover` does).
    """
    accept = on_stale == "accept"
    start = clock()
    by_author: dict[str, list[str]] = {}
    for space_id in dict.fromkeys(space_ids):
        by_author.setdefault(space_id.split("/", 1)[0], []).append(space_id)
    states: dict[str, SpaceState] = {}
    stale_polls: dict[str, int] = {}
    rebooted: set[str] = set()
    began: dict[str, float] = {}  # when each Space was first seen out of the build queue
    cycle = 0
    while True:
        cycle += 1
        elapsed = clock() - start
        authors = [
            a for a, ids in by_author.items() if any(not _done(states.get(i), accept) for i in ids)
        ]
        for author in authors:
            ids = by_author[author]
            search = common_suffix(i.split("/", 1)[1] for i in ids)
            listed = {s.id: s for s in hub.list_spaces(author, search=search)}
            for space_id in ids:
                if not _done(states.get(space_id), accept):
                    state = SpaceState.of(space_id, listed.get(space_id), elapsed)
                    states[space_id] = state
                    if not state.queued:
                        began.setdefault(space_id, elapsed)
                    stale_polls[space_id] = stale_polls.get(space_id, 0) + 1 if state.stale else 0
                    due = not accept and stale_polls[space_id] >= STALE_POLLS
                    if due and space_id not in rebooted:  # once per Space
                        rebooted.add(space_id)
                        with suppress(HubError):  # not rebooted: it stays stale
                            hub.restart(space_id, factory=True)
        now = clock() - start
        left = [
            wait - (now - began[i]) if i in began else wait
            for i, state in states.items()
            if not _done(state, accept)
        ]
        final = not left or max(left) <= 0 or now >= wait * QUEUED_WAITS
        yield Poll(cycle, elapsed, dict(states), len(authors), final)
        if final:
            return
        sleep(max(0.0, min(interval, max(left), wait * QUEUED_WAITS - now)))


def _done(state: SpaceState | None, accept_stale: bool) -> bool:
    return state is not None and (state.terminal or (accept_stale and state.stale))


def settle(hub: Hub, space_id: str, *, wait: float, interval: float = 2.0) -> SpaceState:
    """The Space's state once terminal or stale (for :func:`recover` to triage), or its stage
    when ``wait`` seconds have passed."""
    last = None
    for poll in watch(hub, [space_id], wait=wait, interval=interval, on_stale="accept"):
        last = poll
    assert last is not None
    return last.states[space_id]


def diagnose(
    state: SpaceState, signatures: Iterable[Signature]
) -> tuple[tuple[Signature, str], ...]:
    """Each signature found in the Space's errorMessage, with the text it matched."""
    text = state.error or ""
    found = ((s, s.search(text)) for s in signatures)
    return tuple((s, hit) for s, hit in found if hit is not None)


@dataclass(frozen=True)
class Recovery:
    """What ``recover`` found, did, and left: every action, in order."""

    env: str
    space_id: str
    before: SpaceState
    after: SpaceState
    actions: tuple[str, ...]
    matches: tuple[tuple[Signature, str], ...]
    note: str

    @property
    def recovered(self) -> bool:
        return self.after.ready

    def as_json(self) -> dict[str, Any]:
        return {
            "env": self.env,
            "space": self.space_id,
            "stage_before": self.before.stage,
            "stage_after": self.after.stage,
            "recovered": self.recovered,
            "actions": list(self.actions),
            "error_tail": self.after.error_tail() or None,
            "signatures": [
                {"name": s.name, "matched": hit, "fix": s.fix} for s, hit in self.matches
            ],
            "note": self.note,
        }


def recover(
    hub: Hub,
    config: ReleaseConfig,
    staged: StagedSpace,
    *,
    signatures: Sequence[Signature] = (),
    limit: float = 600.0,
    wait: float = 600.0,
    recreate: bool = False,
    interval: float = 2.0,
    on_action: Callable[[str], None] | None = None,
    fence: Canonicals,
) -> Recovery:
    """Triage ``staged``'s candidate Space and act on it.

    A BUILD_ERROR on a head that already holds the staged tree is stale: one factory reboot.
    APP_STARTING for more than ``limit`` seconds without an errorMessage: a factory reboot,
    then, if still stuck and ``recreate``, delete the Space and deploy it again. A failure
    with an errorMessage is matched against ``signatures``. After an action, waits up to
    ``wait`` seconds for a terminal stage. A canonical Space is refused (``fence``).
    """
    space_id = config.space_id(staged.env)
    fence.refuse(space_id)
    actions: list[str] = []

    def act(action: str) -> None:
        actions.append(action)
        if on_action is not None:
            on_action(action)

    before = state = settle(hub, space_id, wait=limit, interval=interval)
    if state.stage == "BUILD_ERROR" and hub.holds(space_id, staged.staged_dir, staged.manifest):
        act(f"factory reboot of {space_id}: BUILD_ERROR on a head that holds the staged tree")
        hub.restart(space_id, factory=True)
        state = settle(hub, space_id, wait=wait, interval=interval)
    elif state.stage == "APP_STARTING" and not state.error:
        act(f"factory reboot of {space_id}: APP_STARTING for more than {limit:g} s")
        hub.restart(space_id, factory=True)
        state = settle(hub, space_id, wait=limit, interval=interval)
        if state.stage == "APP_STARTING" and recreate:
            act(f"delete {space_id}: still APP_STARTING after a factory reboot")
            hub.delete_space(space_id)
            act(f"redeploy {space_id} from {staged.staged_dir}")
            deployed = deploy_one(hub, config, staged, space_id, fence)
            if deployed.ok:
                state = settle(hub, space_id, wait=wait, interval=interval)
            else:
                act(f"redeploy failed: {deployed.error}")
    matches = diagnose(state, signatures) if state.failed else ()
    return Recovery(
        staged.env, space_id, before, state, tuple(actions), matches, _note(state, before, matches)
    )


def _note(
    state: SpaceState, before: SpaceState, matches: tuple[tuple[Signature, str], ...]
) -> str:
    if state.ready:
        return f"{state.stage}: ready to verify"
    if state.stage == "BUILD_ERROR" and before is state:
        return "the Space's head is not the staged tree: redeploy it (invoke deploy) first"
    if state.stage == "APP_STARTING":
        return "still APP_STARTING: rerun with --recreate --yes to delete and redeploy the Space"
    if state.failed:
        known = ", ".join(s.name for s, _ in matches)
        return f"{state.stage}: " + (f"known failure {known}" if known else "no known signature")
    return f"still {state.stage} after waiting: wait longer, then rerun"
