"""The status board: env x step from the ledger and one Hub listing, and each env's next action
(a command line that would work as printed, or the fix it waits for, then that command)."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from releaselib.config import NO_CHECKOUT, ReleaseConfig
from releaselib.ledger.commands import Commands
from releaselib.ledger.env_state import (
    current_promote,
    data,
    heads_of,
    outcome,
    pin_stands,
    rolled_back,
    superseded,
    undone_reason,
)
from releaselib.ledger.ledger import EnvEntry, Ledger
from releaselib.ledger.report import NO_TOKEN

COLUMNS = (
    "staged", "locked", "deployed", "built", "reset", "step", "promoted", "collected", "pinned"
)  # fmt: skip
#: Runtime stages that mean the image was built (a RUNTIME_ERROR is built; it failed to run).
BUILT = frozenset({"APP_STARTING", "RUNNING", "SLEEPING", "RUNTIME_ERROR"})
NOT_BUILT = frozenset({"BUILD_ERROR", "CONFIG_ERROR", "NO_APP_FILE"})
ARCHIVED = frozenset({"PAUSED", "STOPPED"})


class Cell(enum.Enum):
    """One board cell; the value is what a terminal shows."""

    DONE = "✓"
    FAILED = "✗"
    PENDING = "·"
    SKIPPED = "-"
    ARCHIVED = "~"
    ROLLED_BACK = "↺"  # promoted, then a rollback restored the canonical
    SUPERSEDED = "»"  # a later release's promotion (or pin step) replaced what this one did


LEGEND = (
    "✓ done  ✗ failed  · pending  - does not apply  ~ archived  ↺ rolled back  "
    "» superseded by a later release"
)


@dataclass(frozen=True)
class Row:
    env: str
    cells: Mapping[str, Cell]
    runtime: str | None
    next_action: str
    unlocked: str | None = None  # why the env's dependencies are not locked

    def as_json(self) -> dict[str, Any]:
        return {
            "env": self.env,
            **{c: self.cells[c].name.lower() for c in COLUMNS},
            "runtime": self.runtime,
            "next": self.next_action,
            "unlocked": self.unlocked,
        }


def step_cell(entry: EnvEntry, step: str) -> Cell:
    """A step's own record: ✓ done, ✗ failed, · not run yet."""
    record = entry.get(step)
    if record is None:
        return Cell.PENDING
    return Cell.DONE if record.status == "done" else Cell.FAILED


def locked_cell(entry: EnvEntry) -> Cell:
    """✓ staged with a lock, ✗ its resolution failed, - not lockable, ``--no-lock`` or staging
    failed, · not staged yet (or staged before locks were recorded)."""
    lock = data(entry, "stage").get("lock") or {}
    if step_cell(entry, "stage") is Cell.FAILED:
        return Cell.SKIPPED
    if step_cell(entry, "stage") is Cell.PENDING or not lock:
        return Cell.PENDING
    if lock.get("digest"):
        return Cell.DONE
    failed = str(lock.get("unlocked")).startswith("resolution failed")
    return Cell.FAILED if failed else Cell.SKIPPED


def built_cell(entry: EnvEntry, runtime: str | None) -> Cell:
    """The candidate's runtime stage (the Hub's listing, else the one verify saw): built when
    it starts, runs, sleeps or failed at run time; archived once cleanup paused or deleted it.
    A rehearsal's pause after the verdict (``stopped``) archives nothing: verify's stage counts."""
    seen = data(entry, "verify")
    if runtime in ARCHIVED and seen.get("stopped"):
        runtime = seen.get("stage")
    if entry.get("cleanup") is not None or runtime in ARCHIVED:
        return Cell.ARCHIVED
    if runtime in BUILT:
        return Cell.DONE
    if runtime in NOT_BUILT:
        return Cell.FAILED
    return Cell.PENDING


def exchanges(verify: Mapping[str, Any]) -> list[tuple[str, int | None]]:
    """The verdict's transcript as (request name, status): ``reset``, ``step``, ``ws`` or any
    other path, over HTTP or ``/ws``, in order; from the attempt the verdict rests on, else the
    recorded ``checks``."""
    attempts = verify.get("domain_attempts") or []
    attempt = next((a for a in attempts if a.get("outcome") == verify.get("outcome")), None)
    if attempt is not None:
        pairs = [(e.get("request", ""), e.get("status")) for e in attempt.get("transcript") or ()]
    else:
        pairs = list((verify.get("checks") or {}).items())
    return [(request.partition(" ")[2].removeprefix("/"), status) for request, status in pairs]


def check_cells(entry: EnvEntry) -> tuple[Cell, Cell]:
    """``reset`` and ``step``, agreeing with the verdict: both ✓ on a PASS; else the request
    the verdict stopped at is ✗ for a FAIL and · for an INCONCLUSIVE, one answered before it ✓,
    one never reached - for a FAIL and · otherwise; a RUNTIME_ERROR is a failed reset."""
    verify = data(entry, "verify")
    verdict = verify.get("outcome") if entry.get("verify") is not None else None
    if verdict == "PASS":
        return Cell.DONE, Cell.DONE
    seen = exchanges(verify) if verdict is not None else []
    unreached = Cell.SKIPPED if verdict == "FAIL" else Cell.PENDING
    if not seen and verdict == "FAIL" and verify.get("stage") == "RUNTIME_ERROR":
        return Cell.FAILED, Cell.SKIPPED
    judged = seen[-1][0] if seen else None
    cells = []
    for check in ("reset", "step"):
        statuses = [status for name, status in seen if name == check]
        if check == judged:
            cells.append(Cell.FAILED if verdict == "FAIL" else Cell.PENDING)
        elif statuses:
            cells.append(Cell.DONE if statuses[-1] in (200, 101) else Cell.PENDING)
        else:
            cells.append(unreached)
    return cells[0], cells[1]


def decided_cell(entry: EnvEntry, step: str, done: bool, applies: bool | None) -> Cell:
    """promoted, collected, pinned: ✓ ``done``, ✗ the step failed, · not yet (or no verdict
    yet: ``applies`` None), - the verdict does not call for it."""
    if applies is False:
        return Cell.SKIPPED
    record = entry.get(step)
    if record is not None and record.status == "failed":
        return Cell.FAILED
    return Cell.DONE if done else Cell.PENDING


def promoted_cell(
    entry: EnvEntry, passed: bool | None, heads: Mapping[str, str | None] | None
) -> Cell:
    """✗ rolled back by ``release`` (its canonical FAILed after promotion), ↺ rolled back by the
    ``rollback`` task, » a canonical holds a later release's commit; else as decided."""
    rolled = rolled_back(entry)
    if rolled:
        automatic = any(by == "release" for by, _ in rolled.values())
        return Cell.FAILED if automatic else Cell.ROLLED_BACK
    if superseded(entry, heads):
        return Cell.SUPERSEDED
    promoted = current_promote(entry).get("decision") == "promoted"
    return decided_cell(entry, "promote", promoted, passed)


def pinned_cell(entry: EnvEntry, failed: bool | None, config: ReleaseConfig) -> Cell:
    """As decided; » when the checkout (if known) no longer holds what this release's pin
    wrote (a later release lifted or replaced it)."""
    pin = entry.get("pin")
    if pin is None or pin.data.get("decision") != "pinned":
        return decided_cell(entry, "pin", False, failed)
    if pin.data.get("changed") and not pin_stands(checkout_of(config), pin):
        return Cell.SUPERSEDED
    return decided_cell(entry, "pin", True, failed)


def checkout_of(config: ReleaseConfig) -> Path | None:
    """The OpenEnv checkout the release reads, or None when only its ledger is known."""
    return None if config.repo == NO_CHECKOUT else Path(config.repo)


def next_action(
    entry: EnvEntry,
    cells: Mapping[str, Cell],
    commands: Commands,
    heads: Mapping[str, str | None] | None = None,
    missing: bool = False,
) -> str:
    """What to run next for ``entry`` (``missing``: the Hub listing lacks one of its canonical
    Spaces, so the promote it leads to needs ``--create-missing``)."""
    env = entry.name
    rerun = commands.action("release", envs=[env])
    verify = data(entry, "verify")
    if cells["staged"] is Cell.FAILED:
        return f"fix the staging error, then {rerun}"
    if Cell.PENDING in (cells["staged"], cells["deployed"]) or cells["deployed"] is Cell.FAILED:
        return rerun
    verdict = outcome(entry) if entry.get("verify") is not None else None
    if verdict is None:
        return rerun
    if verdict == "FAIL":
        if cells["pinned"] is Cell.SUPERSEDED:
            return "none: a later release lifted or replaced this release's pin in the checkout"
        if cells["pinned"] is Cell.DONE:
            return f"fix the env, then {rerun}"
        return commands.action("pin", envs=[env])
    if verdict == "INCONCLUSIVE":
        why = verify.get("reason") or "no reason recorded"
        if verify.get("needs"):
            return f"release it against the real Hub ({why})"
        if verify.get("our_error"):
            return f"fix the probe problem ({why}), then {rerun}"
        return f"{rerun}, with a longer --timeout or --wait ({why})"
    promote = data(entry, "promote")
    rolled = rolled_back(entry)
    if rolled and any(by == "release" for by, _ in rolled.values()):  # FAILed after promotion
        fix = f"give {', '.join(rolled)} what the candidate has (the briefing says what differs)"
        undone = undone_reason(entry, None)
        return f"{undone}: {fix}, then {commands.line('promote', '--verify', envs=[env])}"
    if rolled:  # the rollback task's: promoting again is the way on
        again = commands.action("promote", envs=[env])
        return f"{undone_reason(entry, None)}; to promote it again, {again}"
    if cells["promoted"] is Cell.SUPERSEDED:
        return f"none: {undone_reason(entry, heads)}"
    if cells["promoted"] in (Cell.PENDING, Cell.FAILED):
        unlisted = entry.get("promote") is None and missing
        extra = ("--create-missing",) if promote.get("missing") or unlisted else ()
        if entry.get("promote") is None or data(entry, "pin").get("changed"):
            # the pin step changed the checkout after this verdict: redeploy, verify, promote
            return commands.action("release", *extra, envs=[env])
        return commands.action("promote", *extra, envs=[env])
    if cells["collected"] in (Cell.PENDING, Cell.FAILED):
        return commands.action("collection")
    if data(entry, "cleanup").get("action") is None:
        return commands.action("cleanup", "--archive", "--yes")
    return "done"


def board(
    ledger: Ledger,
    runtimes: Mapping[str, str | None],
    config: ReleaseConfig,
    *,
    anonymous: bool = False,
    heads: Mapping[str, str | None] | None = None,
    canonicals: Mapping[str, Sequence[str]] | None = None,
) -> list[Row]:
    """One row per env in the ledger; ``runtimes`` maps Space id -> runtime stage, from a
    listing read without a token when ``anonymous`` (a private candidate it lacks is shown
    as unknown, never as gone; its cells rest on what verify saw). ``heads`` (Space id ->
    head commit, from the same listing) shows a canonical that holds another release's commit
    as superseded; the checkout, when known, does so for a pin a later release lifted.
    ``canonicals`` (env -> its canonical Space ids) makes the next promote of an env whose
    canonical the listing lacks carry ``--create-missing``."""
    on_hub = {space_id.lower() for space_id in runtimes}
    commands = Commands(config, ledger)
    rows = []
    for name in ledger.envs():
        entry = ledger.env(name)
        space_id = data(entry, "deploy").get("space_id") or data(entry, "stage").get("space_id")
        listed = runtimes.get(space_id) if space_id else None
        runtime = listed or data(entry, "verify").get("stage")
        verdict = data(entry, "verify").get("outcome") if entry.get("verify") else None
        # no verdict yet: pending, unless staging or deploying failed (nothing follows)
        stuck = verdict is None and outcome(entry) == "FAIL"
        passed = False if stuck else None if verdict is None else verdict == "PASS"
        failed = False if stuck else None if verdict is None else verdict == "FAIL"
        reset, step = check_cells(entry)
        cells = {
            "staged": step_cell(entry, "stage"),
            "locked": locked_cell(entry),
            "deployed": step_cell(entry, "deploy"),
            "built": built_cell(entry, runtime),
            "reset": reset,
            "step": step,
            "promoted": promoted_cell(entry, passed, heads),
            "collected": decided_cell(
                entry, "collection", step_cell(entry, "collection") is Cell.DONE, passed
            ),
            "pinned": pinned_cell(entry, failed, config),
        }
        shown = NO_TOKEN if anonymous and space_id and space_id not in runtimes else runtime
        unlocked = (data(entry, "stage").get("lock") or {}).get("unlocked")
        lacking = any(t.lower() not in on_hub for t in (canonicals or {}).get(name, ()))
        action = next_action(entry, cells, commands, heads, lacking and not anonymous)
        rows.append(Row(name, cells, shown, action, unlocked))
    return rows


def runtimes_of(spaces: Sequence[Any]) -> dict[str, str | None]:
    """Space id -> stage, from ``Hub.list_spaces`` results."""
    return {s.id: s.stage for s in spaces}


def canonicals_of(registry: Any, namespace: str, envs: Sequence[str]) -> dict[str, list[str]]:
    """Env -> its canonical Space ids (its plugin's, else ``<namespace>/<env>``)."""
    from releaselib.publish.canonical_targets import canonical_targets

    return {
        env: [str(t.space_id) for t in canonical_targets(registry, env, namespace, ())]
        for env in envs
    }


def listed_board(
    ledger: Ledger,
    spaces: Sequence[Any],
    config: ReleaseConfig,
    *,
    anonymous: bool = False,
    registry: Any = None,
) -> list[Row]:
    """:func:`board` from one Hub listing (``Hub.list_spaces``): runtimes and heads; with the
    plugin ``registry``, each env's canonical Spaces too."""
    namespace, envs = config.namespace, ledger.envs()
    canonicals = None if registry is None else canonicals_of(registry, namespace, envs)
    runtimes, heads = runtimes_of(spaces), heads_of(spaces)
    return board(ledger, runtimes, config, anonymous=anonymous, heads=heads, canonicals=canonicals)
