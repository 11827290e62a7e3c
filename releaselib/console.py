"""Human output: the release tuple and the per-env tables, rendered with rich."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich import box
from rich.console import Console
from rich.table import Table

from releaselib.config import RefResolution, ReleaseConfig
from releaselib.deploy import Deployed
from releaselib.plugins import PluginRegistry
from releaselib.records import EnvSpec, StagedSpace
from releaselib.stage import CREDENTIALS_WHY
from releaselib.status import COLUMNS, Cell, Row

OK = "[green]ok[/]"
FAILED = "[red]FAILED[/]"


def print_tuple(console: Console, config: ReleaseConfig, resolution: RefResolution) -> None:
    """The release tuple, printed at the start of every run (it holds no token)."""
    table = Table(title="release", show_header=False, box=None, pad_edge=False)
    rows = [
        ("namespace", config.namespace),
        ("version", config.version),
        ("ref", f"{config.ref}  ({resolution.reason})"),
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
        table.add_row(f"[bold]{key}[/]", value)
    console.print(table)
    if resolution.warning:
        console.print(f"[yellow]warning:[/] {resolution.warning}")


def print_staged(console: Console, staged: Sequence[StagedSpace]) -> None:
    table = Table(title="staged")
    for column in ("env", "space", "fixes", "checks", "files", "bytes", "result"):
        table.add_column(
            column, justify="right" if column in {"files", "bytes"} else "left", overflow="fold"
        )
    for s in staged:
        failed_checks = [c.split(":")[0] for c in s.checks if c.endswith(":fail")]
        checks = f"{len(s.checks) - len(failed_checks)}/{len(s.checks)}" if s.checks else "-"
        table.add_row(
            s.env,
            s.space_id,
            ", ".join(s.fixes) or "-",
            checks,
            str(s.files),
            f"{s.bytes:,}",
            OK if s.ok else FAILED,
        )
    console.print(table)
    for s in staged:
        for change in s.changes:
            if change.why == CREDENTIALS_WHY:
                console.print(f"{s.env}: left out {change.file} ({change.why})", soft_wrap=True)
        if s.error:
            console.print(f"[red]error:[/] {s.error}", soft_wrap=True)
    failed = sum(not s.ok for s in staged)
    console.print(f"{len(staged) - failed} staged, {failed} failed")


def print_envs(console: Console, specs: Iterable[EnvSpec], registry: PluginRegistry) -> None:
    table = Table(title="envs")
    for column in ("env", "deployable", "why", "plugin", "canonical targets"):
        table.add_column(column, overflow="fold")
    for spec in specs:
        table.add_row(
            spec.name,
            OK if spec.deployable else "[red]no[/]",
            spec.reason,
            registry.plugin_for(spec.name) or "-",
            ", ".join(t.repo for t in registry.targets(spec.name)) or "(same name, if it exists)",
        )
    console.print(table)


def print_plugins(console: Console, rows: Sequence[dict[str, object]]) -> None:
    table = Table(title="plugins")
    for column in ("plugin", "envs", "fixes", "probes", "checks", "targets"):
        table.add_column(column, overflow="fold")
    for row in rows:
        cells = [row.get(k) for k in ("envs", "fixes", "probes", "checks", "targets")]
        table.add_row(
            str(row["plugin"]),
            *[", ".join(map(str, c)) if isinstance(c, list) and c else "-" for c in cells],
        )
    console.print(table)


def deploy_line(d: Deployed) -> str:
    """One progress line as each env finishes deploying."""
    if not d.ok:
        return f"[red]✗[/] {d.space_id}: {d.error}"
    what = "unchanged" if d.unchanged else f"commit {(d.commit or '')[:12]}"
    return f"[green]✓[/] {d.space_id}: {'created, ' if d.created else ''}{what}"


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
                d.staged.env,
                d.space_id,
                "-"
                if p is None
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
                d.staged.env,
                d.space_id,
                "yes" if d.created else "no",
                "unchanged" if d.unchanged else (d.commit or "-")[:12],
                str(d.files_sent),
                f"{d.bytes_sent:,}",
                result,
            )
    console.print(table)
    for d in results:
        if d.error:
            console.print(f"[red]error:[/] {d.error}", soft_wrap=True)
        elif d.plan and d.plan.note:
            console.print(f"[yellow]note:[/] {d.space_id}: {d.plan.note}")


CELL_STYLE = {Cell.DONE: "green", Cell.FAILED: "red", Cell.PENDING: "yellow", Cell.SKIPPED: "dim"}


def print_board(console: Console, rows: Sequence[Row]) -> None:
    """The status board: env x step with symbols and colours, then each env's runtime stage
    and next action."""
    table = Table(title="status", box=box.SIMPLE_HEAD, pad_edge=False, padding=0)
    table.add_column("env", no_wrap=True)
    for column in COLUMNS:
        table.add_column(column, justify="center", min_width=len(column))
    for row in rows:
        cells = [f"[{CELL_STYLE[row.cells[c]]}]{row.cells[c].value}[/]" for c in COLUMNS]
        table.add_row(row.env, *cells)
    console.print(table)
    console.print("✓ done  ✗ failed  · pending  - does not apply")
    for row in rows:
        console.print(
            f"{row.env} ({row.runtime or 'no runtime'}): next, {row.next_action}", soft_wrap=True
        )
