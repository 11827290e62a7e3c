"""Human output: the release tuple and the per-env tables, rendered with rich."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.console import Console
from rich.table import Table

from releaselib.config import RefResolution, ReleaseConfig
from releaselib.plugins import PluginRegistry
from releaselib.records import EnvSpec, StagedSpace

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
        table.add_column(column, justify="right" if column in {"files", "bytes"} else "left")
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
        if s.error:
            console.print(f"[red]error:[/] {s.error}", soft_wrap=True)
    failed = sum(not s.ok for s in staged)
    console.print(f"{len(staged) - failed} staged, {failed} failed")


def print_envs(console: Console, specs: Iterable[EnvSpec], registry: PluginRegistry) -> None:
    table = Table(title="envs")
    for column in ("env", "deployable", "why", "plugin", "canonical targets"):
        table.add_column(column)
    for spec in specs:
        profile = registry.profile(spec.name)
        table.add_row(
            spec.name,
            OK if spec.deployable else "[red]no[/]",
            spec.reason,
            registry.plugin_for(spec.name) or "-",
            ", ".join(t.repo for t in profile.targets) or "(same name, if it exists)",
        )
    console.print(table)


def print_plugins(console: Console, rows: Sequence[dict[str, object]]) -> None:
    table = Table(title="plugins")
    for column in ("plugin", "envs", "fixes", "probes", "checks", "targets"):
        table.add_column(column)
    for row in rows:
        cells = [row.get(k) for k in ("envs", "fixes", "probes", "checks", "targets")]
        table.add_row(
            str(row["plugin"]),
            *[", ".join(map(str, c)) if isinstance(c, list) and c else "-" for c in cells],
        )
    console.print(table)
