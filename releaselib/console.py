"""Human output: the release tuple and the per-env tables, rendered with rich.

Text that is not ours (env names, paths, errors, anything a Space or the Hub said) is data: it
goes into rich escaped, never parsed as markup (an error holding ``[/INST]`` is printed as it is).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from releaselib.config import RefResolution, ReleaseConfig
from releaselib.plugins import PluginRegistry
from releaselib.records import EnvSpec, StagedSpace

if TYPE_CHECKING:  # what the steps import is loaded only when they print
    from releaselib.hub.deploy import Deployed
    from releaselib.ledger.status import Row

OK = "[green]ok[/]"
FAILED = "[red]FAILED[/]"
#: The width off a terminal (a pipe, a file, a CI log): wide enough that no table ever folds a
#: word, so each record stays on its line (rich would otherwise assume 80 columns).
OFF_TERMINAL_WIDTH = 10_000


def make_console(*, stderr: bool = False) -> Console:
    """Where a task prints: the terminal's width on a terminal, else ``OFF_TERMINAL_WIDTH``."""
    console = Console(stderr=stderr, highlight=False)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, highlight=False, width=OFF_TERMINAL_WIDTH)


def print_tuple(console: Console, config: ReleaseConfig, resolution: RefResolution) -> None:
    """The release tuple, printed at the start of every run (it holds no token)."""
    table = Table(title="release", show_header=False, box=None, pad_edge=False)
    rows = [
        ("namespace", config.namespace),
        ("version", config.version),
        ("ref", f"{config.pin_label}  ({resolution.reason})"),
        ("distribution", config.dist),
        ("suffix", config.suffix),
        ("base image", config.base_image),
        ("visibility", "private" if config.private else "public"),
        ("checkout", str(config.repo)),
        ("staging dir", str(config.staging_dir)),
    ]
    if config.hub_endpoint:
        rows.append(("hub", config.hub_endpoint))
    for key, value in rows:
        table.add_row(f"[bold]{key}[/]", escape(value))
    console.print(table)
    if resolution.warning:
        warn(console, resolution.warning)


def warn(console: Console, text: str) -> None:
    """One warning, one line: the terminal wraps it, never rich at a width it guessed."""
    console.print(f"[yellow]warning:[/] {escape(text)}", soft_wrap=True)


def print_staged(console: Console, staged: Sequence[StagedSpace]) -> None:
    from releaselib.stage.sources import CREDENTIALS_WHY

    table = Table(title="staged")
    for column in ("env", "space", "fixes", "checks", "files", "bytes", "result"):
        table.add_column(
            column, justify="right" if column in {"files", "bytes"} else "left", overflow="fold"
        )
    for s in staged:
        failed_checks = [c.split(":")[0] for c in s.checks if c.endswith(":fail")]
        checks = f"{len(s.checks) - len(failed_checks)}/{len(s.checks)}" if s.checks else "-"
        table.add_row(
            escape(s.env),
            escape(s.space_id),
            escape(", ".join(f.name for f in s.fixes) or "-"),
            checks,
            str(s.files),
            f"{s.bytes:,}",
            OK if s.ok else FAILED,
        )
    console.print(table)
    if any(not s.git for s in staged):
        console.print(
            "[yellow]warning:[/] the checkout is no git repository: staged as it is, "
            "untracked files included",
            soft_wrap=True,
        )
    for s in staged:
        if s.worktree:
            console.print(escape(s.worktree), soft_wrap=True)
        for f in s.allowed_secrets:
            line = f"{s.env}: allowed secret {f} ({f.allowed_by})"
            console.print(escape(line), soft_wrap=True)
        for change in s.changes:
            if change.why == CREDENTIALS_WHY:
                line = f"{s.env}: left out {change.file} ({change.why})"
                console.print(escape(line), soft_wrap=True)
        if s.error:
            console.print(f"[red]error:[/] {escape(s.error)}", soft_wrap=True)
        elif s.lock and s.lock.unlocked and s.lock.unlocked.startswith("resolution failed"):
            warn(console, f"{s.env}: not locked: {s.lock.unlocked}")
    failed = sum(not s.ok for s in staged)
    console.print(f"{len(staged) - failed} staged, {failed} failed")


def print_envs(console: Console, specs: Iterable[EnvSpec], registry: PluginRegistry) -> None:
    table = Table(title="envs")
    for column in ("env", "deployable", "why", "plugin", "canonical targets"):
        table.add_column(column, overflow="fold")
    for spec in specs:
        table.add_row(
            escape(spec.name),
            OK if spec.deployable else "[red]no[/]",
            escape(spec.reason),
            escape(registry.plugin_for(spec.name) or "-"),
            escape(", ".join(t.repo for t in registry.targets(spec.name)))
            or "(same name, if it exists)",
        )
    console.print(table)


def print_plugins(console: Console, rows: Sequence[dict[str, object]]) -> None:
    table = Table(title="plugins")
    for column in ("plugin", "envs", "fixes", "probes", "checks", "targets", "needs"):
        table.add_column(column, overflow="fold")
    for row in rows:
        cells = [row.get(k) for k in ("envs", "fixes", "probes", "checks", "targets", "needs")]
        table.add_row(
            escape(str(row["plugin"])),
            *[escape(", ".join(map(str, c))) if isinstance(c, list) and c else "-" for c in cells],
        )
    console.print(table)


def deploy_status(d: Deployed) -> str:
    """How an env's deploy ended, for its row of the progress display."""
    if not d.ok:
        return f"failed: {d.error}"
    what = "unchanged" if d.unchanged else f"committed {(d.commit or '')[:12]}"
    return f"{'created, ' if d.created else ''}{what}"


STATUS_STYLE = {
    "staging": "cyan",
    "staged": "cyan",
    "uploading": "yellow",
    "failed": "red",
    "BUILDING": "yellow",
    "APP_STARTING": "yellow",
    "probing": "cyan",
    "FAIL": "red",
    "INCONCLUSIVE": "yellow",
    "BUILD_ERROR": "red",
    "RUNTIME_ERROR": "red",
}


class ProgressBoard:
    """Progress of long work, one row per Space with how long it has been in its stage: a
    live table when ``live``; else each change is one plain line on stderr (``<title>
    <space>: <stage>``), for logs and for runs whose stdout carries JSON. ``deploy`` shows
    staging, uploading N files / bytes, then the commit; ``release`` also the runtime stages
    it waits through and the verdicts."""

    def __init__(
        self, console: Console, space_ids: Sequence[str], *, live: bool, title: str = "deploy"
    ) -> None:
        self.title = title
        self.status = dict.fromkeys(space_ids, "waiting")
        self.since = dict.fromkeys(space_ids, time.monotonic())
        self.lock = threading.Lock()
        self.live = (
            Live(get_renderable=self.render, console=console, transient=True) if live else None
        )

    def __enter__(self) -> ProgressBoard:
        if self.live is not None:
            self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.stop()

    def update(self, space_id: str, text: str) -> None:
        with self.lock:
            if self.status.get(space_id) == text:
                return
            self.status[space_id] = text
            self.since[space_id] = time.monotonic()
        if self.live is None:
            print(f"{self.title} {space_id}: {text}", file=sys.stderr, flush=True)

    def render(self) -> Table:
        table = Table(title=f"{self.title}ing" if self.title == "deploy" else self.title, box=None)
        for column in ("space", "status", "for"):
            table.add_column(column)
        now = time.monotonic()
        with self.lock:
            for space_id, text in self.status.items():
                style = STATUS_STYLE.get(text.split(" ")[0].rstrip(":"), "green")
                seconds = f"{now - self.since[space_id]:.0f} s"
                table.add_row(escape(space_id), f"[{style}]{escape(text)}[/]", seconds)
        return table


def print_deployed(console: Console, results: Sequence[Deployed], *, dry_run: bool) -> None:
    table = Table(title="deploy plan" if dry_run else "deployed")
    columns = (
        ("env", "space", "action", "add", "change", "delete", "visibility", "result")
        if dry_run
        else ("env", "space", "created", "commit", "files", "bytes", "result")
    )
    for column in columns:
        table.add_column(column, overflow="fold")
    for d in results:
        result = OK if d.ok else FAILED
        if dry_run:
            p = d.plan
            table.add_row(
                escape(d.staged.env),
                escape(d.space_id),
                "-"
                if p is None
                else "refused"
                if p.refused
                else "unknown"
                if p.exists is None
                else "exists"
                if p.exists
                else "create",
                *(
                    str(len(x)) if p else "-"
                    for x in ((p.add, p.change, p.delete) if p else ((), (), ()))
                ),
                (p.visibility or "-") if p else "-",
                result,
            )
        else:
            table.add_row(
                escape(d.staged.env),
                escape(d.space_id),
                "yes" if d.created else "no",
                "unchanged" if d.unchanged else (d.commit or "-")[:12],
                str(d.files_sent),
                f"{d.bytes_sent:,}",
                result,
            )
    console.print(table)
    for d in results:
        if d.staged.worktree:  # what it uploads beyond the commit, as stage and release say
            console.print(escape(d.staged.worktree), soft_wrap=True)
        if d.error:
            console.print(f"[red]error:[/] {escape(d.error)}", soft_wrap=True)
        elif note := d.note or (d.plan.note if d.plan else None):
            console.print(f"[yellow]note:[/] {escape(f'{d.space_id}: {note}')}")


def print_board(console: Console, rows: Sequence[Row]) -> None:
    """The status board: env x step with symbols and colours, then each env's runtime stage
    and next action."""
    from releaselib.ledger.status import COLUMNS, LEGEND, Cell

    style = {
        Cell.DONE: "green",
        Cell.FAILED: "red",
        Cell.PENDING: "yellow",
        Cell.SKIPPED: "dim",
        Cell.ARCHIVED: "blue",
        Cell.ROLLED_BACK: "magenta",
        Cell.SUPERSEDED: "cyan",
    }
    table = Table(title="status", box=box.SIMPLE_HEAD, pad_edge=False, padding=0)
    table.add_column("env", no_wrap=True)
    for column in COLUMNS:
        table.add_column(column, justify="center", min_width=len(column))
    for row in rows:
        cells = [f"[{style[row.cells[c]]}]{row.cells[c].value}[/]" for c in COLUMNS]
        table.add_row(escape(row.env), *cells)
    console.print(table)
    console.print(LEGEND)
    for row in rows:
        line = f"{row.env} ({row.runtime or 'no runtime'}): next, {row.next_action}"
        console.print(escape(line), soft_wrap=True)  # the command ends the line: runs as printed
        if row.unlocked:
            console.print(escape(f"{row.env}: not locked: {row.unlocked}"), soft_wrap=True)
