"""Human output of the steps that decide per env: verify's verdicts, recover's triage, and
promote's, collection's, pin's and cleanup's decisions, as rich tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from releaselib.hub.runtime import Recovery
    from releaselib.publish.canonical_check import CanonicalCheck
    from releaselib.publish.cleanup import Cleanup
    from releaselib.publish.collection import CollectionSync
    from releaselib.publish.pin_step import PinDecision
    from releaselib.publish.promote import Promotion
    from releaselib.publish.rollback import Restore
    from releaselib.verify.candidates import VerifyResult


def print_rows(
    console: Console, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]
) -> None:
    """A plain table of strings, one row per record; the strings are data, never markup."""
    table = Table(title=title)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*map(escape, row))
    console.print(table)


def print_promotions(console: Console, decisions: Sequence[Promotion], *, dry_run: bool) -> None:
    print_rows(
        console,
        "promote plan" if dry_run else "promoted",
        ("env", "candidate", "target", "status", "files", "variables", "reason"),
        [
            (
                d.env,
                d.candidate,
                d.target,
                d.status,
                f"+{len(d.upload)} -{len(d.delete)}",
                ", ".join(d.variables) or "-",
                d.reason or "-",
            )
            for d in decisions
        ],
    )


def print_canonical_checks(console: Console, checks: Sequence[CanonicalCheck]) -> None:
    """The canonicals' verdicts after promotion, and what was rolled back."""
    print_rows(
        console,
        "canonicals after promotion",
        ("env", "canonical", "outcome", "previous", "promoted", "rolled back", "reason"),
        [
            (
                c.env,
                c.target,
                c.outcome,
                (c.previous or "-")[:12],
                (c.promoted or "-")[:12],
                (c.rollback.commit or "yes")[:12] if c.rolled_back and c.rollback else "no",
                "; ".join([c.reason, *c.differences]),
            )
            for c in checks
        ],
    )


def print_restores(console: Console, restores: Sequence[Restore], *, applied: bool) -> None:
    """rollback's plan or what it did; a second rollback says it changed nothing."""
    if not restores:
        console.print("nothing to roll back: promote recorded no canonical Space", markup=False)
        return
    if all(r.status == "current" and not r.kept for r in restores):
        console.print(
            "nothing to roll back: every canonical already holds the commit and variables "
            "recorded before the release's promotion",
            markup=False,
        )
        return
    print_rows(
        console,
        "rollback" if applied else "rollback plan (pass --yes to do it)",
        ("env", "canonical", "status", "head", "restores", "files", "variables", "reason"),
        [
            (
                r.env,
                r.target,
                r.status,
                (r.head or "-")[:12],
                _restores(r),
                f"+{len(r.upload)} -{len(r.delete)}",
                ", ".join(r.variables) or "-",
                r.reason or "-",
            )
            for r in restores
        ],
    )


def _restores(r: Restore) -> str:
    """The recorded commit a rollback restores, and the commit that restored it."""
    previous = r.previous[:12] if r.previous else "an empty Space"
    return f"{previous} as {r.commit[:12]}" if r.commit else previous


def print_collection(console: Console, sync: CollectionSync, *, dry_run: bool) -> None:
    if sync.planned and not dry_run:
        console.print(f"{sync.title}: planned only, pass --yes to write it", markup=False)
    dry_run = sync.planned
    state = "would create" if dry_run and sync.created else "created" if sync.created else "exists"
    console.print(f"[bold]{escape(sync.title)}[/] {escape(sync.slug)} ({state})")
    if sync.metadata:
        console.print(f"  re-synced: {', '.join(sync.metadata)}", markup=False)
    rows = [(i, "would add" if dry_run else "added") for i in sync.added]
    rows += [(i, "present") for i in sync.present]
    rows += [(i, f"skipped: {why}") for i, why in sync.skipped]
    print_rows(console, "items", ("space", "state"), rows)


def print_pins(
    console: Console, decisions: Sequence[PinDecision], sha: str | None, *, commit: bool
) -> None:
    print_rows(
        console,
        "pins",
        ("env", "decision", "changed", "reason"),
        [(d.env, d.decision, "yes" if d.changed else "no", d.error or d.reason) for d in decisions],
    )
    for d in decisions:
        if d.changed and d.result is not None:
            console.print(d.result.diff, markup=False, highlight=False, end="")
    if commit:
        console.print(f"committed {sha}" if sha else "nothing to commit")


def print_cleanup(console: Console, results: Sequence[Cleanup], *, applied: bool) -> None:
    print_rows(
        console,
        "cleanup" if applied else "cleanup plan (pass --yes to do it)",
        ("env", "candidate", "status", "steps", "reason"),
        [
            (r.env, r.space_id, r.status, ", ".join(r.steps) or "-", r.reason or "-")
            for r in results
        ],
    )


COLOURS = {"PASS": "green", "FAIL": "red", "INCONCLUSIVE": "yellow"}


def print_results(console: Console, results: Sequence[VerifyResult]) -> None:
    from releaselib.verify.probe import Outcome

    table = Table(title="verify")
    for column in ("space", "stage", "domain", "outcome", "wait s", "probe s", "reason"):
        table.add_column(column, overflow="fold")
    for r in results:
        data = r.as_json()
        colour = COLOURS[r.outcome.value]
        table.add_row(
            escape(r.space_id),
            escape(r.state.stage or "-"),
            escape(data["domain"] or "-"),
            f"[{colour}]{r.outcome.value}[/]",
            f"{r.state.seen_at:.1f}",
            f"{r.probe_seconds:.1f}",
            escape(r.reason),
        )
    console.print(table)
    counts = {o.value: sum(r.outcome is o for r in results) for o in Outcome}
    console.print(", ".join(f"{n} {o}" for o, n in counts.items()))


def print_recovery(console: Console, recovery: Recovery) -> None:
    console.print(
        f"{recovery.space_id}: {recovery.before.stage} -> {recovery.after.stage}; {recovery.note}",
        markup=False,
    )
    if recovery.after.error:
        console.print("[bold]errorMessage (tail):[/]")
        console.print(recovery.after.error_tail(), markup=False, highlight=False)
    for signature, matched in recovery.matches:
        known = f"[bold]known failure {escape(signature.name)}[/]"
        console.print(f"{known} ({escape(repr(matched))}): {escape(signature.fix)}")


def verdict_stands(env: str, outcome: str, standing: str) -> str:
    """What an attempt that left the recorded verdict standing says."""
    return f"{env}: {outcome} is no evidence; the recorded {standing} stands"
