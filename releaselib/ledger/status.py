"""The status board: env x step from the ledger and one Hub listing, and each env's next action
(a command line that would work as printed, or the fix it waits for, then that command)."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from releaselib.config import ReleaseConfig
from releaselib.ledger.ledger import EnvEntry, Ledger
from releaselib.ledger.report import Commands, data, outcome

COLUMNS = ("staged", "deployed", "built", "reset", "step", "promoted", "collected", "pinned")
RUNNING = frozenset({"RUNNING", "SLEEPING"})
BROKEN = frozenset({"BUILD_ERROR", "RUNTIME_ERROR", "CONFIG_ERROR", "NO_APP_FILE"})


class Cell(enum.Enum):
    """One board cell; the value is what a terminal shows."""

    DONE = "✓"
    FAILED = "✗"
    PENDING = "·"
    SKIPPED = "-"


@dataclass(frozen=True)
class Row:
    env: str
    cells: Mapping[str, Cell]
    runtime: str | None
    next_action: str

    def as_json(self) -> dict[str, Any]:
        return {
            "env": self.env,
            **{c: self.cells[c].name.lower() for c in COLUMNS},
            "runtime": self.runtime,
            "next": self.next_action,
        }


def step_cell(entry: EnvEntry, step: str) -> Cell:
    record = entry.get(step)
    if record is None:
        return Cell.PENDING
    return Cell.DONE if record.status == "done" else Cell.FAILED


def check_cell(entry: EnvEntry, check: str) -> Cell:
    """``reset``/``step`` from the decisive probe's statuses (``{"POST /reset": 200, ...}``)."""
    status = data(entry, "verify").get("checks", {}).get(f"POST /{check}")
    if status is None:
        return Cell.PENDING
    return Cell.DONE if status == 200 else Cell.FAILED


def built_cell(runtime: str | None) -> Cell:
    if runtime in RUNNING:
        return Cell.DONE
    if runtime in BROKEN:
        return Cell.FAILED
    return Cell.PENDING


def flag_cell(value: bool, applies: bool) -> Cell:
    if not applies:
        return Cell.SKIPPED
    return Cell.DONE if value else Cell.PENDING


def next_action(entry: EnvEntry, cells: Mapping[str, Cell], commands: Commands) -> str:
    env = entry.name
    rerun = commands.line("release", envs=[env])
    verify = data(entry, "verify")
    if cells["staged"] is Cell.FAILED:
        return f"fix the staging error, then {rerun}"
    if Cell.PENDING in (cells["staged"], cells["deployed"]) or cells["deployed"] is Cell.FAILED:
        return rerun
    verdict = outcome(entry) if entry.get("verify") is not None else None
    if verdict is None:
        return rerun
    if verdict == "FAIL":
        if cells["pinned"] is Cell.DONE:
            return f"fix the env, then {rerun}"
        return commands.line("pin", envs=[env])
    if verdict == "INCONCLUSIVE":
        why = verify.get("reason") or "no reason recorded"
        if verify.get("needs"):
            return f"release it against the real Hub ({why})"
        if verify.get("our_error"):
            return f"fix the probe problem ({why}), then {rerun}"
        return f"{rerun}, with a longer --timeout or --wait ({why})"
    promote = data(entry, "promote")
    if cells["promoted"] is Cell.PENDING:
        extra = ("--create-missing",) if promote.get("missing") else ()
        if entry.get("promote") is None or data(entry, "pin").get("changed"):
            # the pin step changed the checkout after this verdict: redeploy, verify, promote
            return commands.line("release", *extra, envs=[env])
        return commands.line("promote", *extra, envs=[env])
    if cells["collected"] is Cell.PENDING:
        return commands.line("collection")
    if data(entry, "cleanup").get("action") is None:
        return commands.line("cleanup", "--archive", "--yes")
    return "done"


def board(ledger: Ledger, runtimes: Mapping[str, str | None], config: ReleaseConfig) -> list[Row]:
    """One row per env in the ledger; ``runtimes`` maps Space id -> runtime stage."""
    commands = Commands(config, ledger)
    rows = []
    for name in ledger.envs():
        entry = ledger.env(name)
        space_id = data(entry, "deploy").get("space_id") or data(entry, "stage").get("space_id")
        runtime = runtimes.get(space_id) if space_id else None
        runtime = runtime or data(entry, "verify").get("stage")
        verdict = outcome(entry)
        promote, pin = data(entry, "promote"), data(entry, "pin")
        cells = {
            "staged": step_cell(entry, "stage"),
            "deployed": step_cell(entry, "deploy"),
            "built": built_cell(runtime),
            "reset": check_cell(entry, "reset"),
            "step": check_cell(entry, "step"),
            "promoted": flag_cell(promote.get("decision") == "promoted", verdict == "PASS"),
            "collected": flag_cell(bool(data(entry, "collection")), verdict == "PASS"),
            "pinned": flag_cell(pin.get("decision") == "pinned", verdict == "FAIL"),
        }
        rows.append(Row(name, cells, runtime, next_action(entry, cells, commands)))
    return rows


def runtimes_of(spaces: Sequence[Any]) -> dict[str, str | None]:
    """Space id -> stage, from ``Hub.list_spaces`` results."""
    return {s.id: s.stage for s in spaces}
