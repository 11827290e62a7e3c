"""The ``verify`` and ``recover`` tasks: flags in, releaselib.verify and hub.runtime, out."""

from __future__ import annotations

import json as jsonlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from invoke.context import Context
from invoke.exceptions import Exit
from invoke.tasks import task
from rich.console import Console
from rich.table import Table

from openenv_release.common import consoles, helps, open_ledger, release_config, reported
from releaselib import console as out
from releaselib.config import check_seconds
from releaselib.errors import UsageError
from releaselib.options import Options, build_config, check_jobs, pick
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.records import SPACE_ID
from releaselib.stage.discover import check_env_flags, discover_envs, select_envs

if TYPE_CHECKING:
    from releaselib.hub.runtime import Recovery
    from releaselib.ledger.ledger import Ledger
    from releaselib.verify.candidates import VerifyResult

COLOURS = {"PASS": "green", "FAIL": "red", "INCONCLUSIVE": "yellow"}
HELP = {
    **helps("repo", "version", "namespace", "suffix", "json", "hub_endpoint"),
    # spelt out so --help loads no releaselib.verify.candidates; tests/test_cli.py checks they match
    "probe_jobs": "how many Spaces to probe at once (default 16, or fewer Spaces)",
    "env": "env whose candidate to verify (repeatable; default: every Space with the suffix)",
    "space_id": "also verify this owner/name Space (repeatable)",
    "timeout": "seconds per probe request (default 20; slow envs get more)",
    "wait": "seconds to wait for BUILDING/APP_STARTING Spaces (default 600)",
    "ledger": "record results in this ledger (default: the release's ledger, if it exists)",
    "staging_dir": "where the release's ledger is looked for (default: ./hf-staging)",
}


def print_results(console: Console, results: Sequence[VerifyResult]) -> None:
    from releaselib.verify.probe import Outcome

    table = Table(title="verify")
    for column in ("space", "stage", "domain", "outcome", "wait s", "probe s", "reason"):
        table.add_column(column, overflow="fold")
    for r in results:
        data = r.as_json()
        colour = COLOURS[r.outcome.value]
        table.add_row(
            r.space_id,
            r.state.stage or "-",
            data["domain"] or "-",
            f"[{colour}]{r.outcome.value}[/]",
            f"{r.state.seen_at:.1f}",
            f"{r.probe_seconds:.1f}",
            r.reason,
        )
    console.print(table)
    counts = {o.value: sum(r.outcome is o for r in results) for o in Outcome}
    console.print(", ".join(f"{n} {o}" for o, n in counts.items()))


def print_recovery(console: Console, recovery: Recovery) -> None:
    console.print(
        f"{recovery.space_id}: {recovery.before.stage} -> {recovery.after.stage}; {recovery.note}"
    )
    if recovery.after.error:
        console.print("[bold]errorMessage (tail):[/]")
        console.print(recovery.after.error_tail(), markup=False, highlight=False)
    for signature, matched in recovery.matches:
        console.print(f"[bold]known failure {signature.name}[/] ({matched!r}): {signature.fix}")


def record(ledger: Ledger | None, result: VerifyResult, **extra: Any) -> str | None:
    """Record ``result`` as the env's verify step (its Verdict fields included); a note when
    it was only an attempt that left the recorded verdict standing."""
    from releaselib.verify.candidates import record_result

    if ledger is None or record_result(ledger, result, **extra):
        return None
    standing = ledger.env(result.env).get("verify")
    verdict = standing.data.get("outcome") if standing else None
    return f"{result.env}: {result.outcome.value} is no evidence; the recorded {verdict} stands"


def number(name: str, flag: str | None, configured: dict[str, Any], default: float) -> float:
    """A positive number from its flag, environment variable, invoke config or default."""
    return check_seconds(pick(name, flag, configured, default), f"--{name}", default)


@task(
    iterable=["env", "space_id"],
    help={
        **HELP,
        "repo": "OpenEnv checkout, only for the default --version (verify needs none)",
        "version": "release version (default: the release ledger's; or --suffix without '-')",
    },
)
def verify(
    c: Context,
    repo: str | None = None,
    env: list[str] | None = None,
    version: str | None = None,
    suffix: str | None = None,
    space_id: list[str] | None = None,
    namespace: str | None = None,
    timeout: str | None = None,
    wait: str | None = None,
    probe_jobs: str | None = None,
    hub_endpoint: str | None = None,
    ledger: str | None = None,
    staging_dir: str | None = None,
    json: bool = False,
) -> None:
    """Wait for the candidates, then require a real reset and step on a READY domain.

    Exit 1 if any FAILed, else 5 if any is INCONCLUSIVE. Needs no OpenEnv checkout: the tuple
    comes from the flags or the release's ledger.
    """

    from releaselib.hub.client import Hub
    from releaselib.verify.candidates import DEFAULT_TIMEOUT, PROBE_JOBS, candidates, verify_spaces
    from releaselib.verify.verdicts import exit_status
    from releaselib.verify.verify_tuple import verify_config

    with reported():
        options = Options(
            repo=repo,
            version=version,
            namespace=namespace,
            suffix=suffix,
            hub_endpoint=hub_endpoint,
            staging_dir=staging_dir,
        )
        configured = release_config(c)
        config, resolution, found = verify_config(options, configured, ledger=ledger)
        threads = check_jobs(pick("probe_jobs", probe_jobs, configured, PROBE_JOBS), "--probe-jobs")
        probe_timeout = number("timeout", timeout, configured, DEFAULT_TIMEOUT)
        build_wait = number("wait", wait, configured, 600.0)
        console = consoles(json)
        out.print_tuple(console, config, resolution)
        for given in space_id or []:
            if not SPACE_ID.match(given):
                raise UsageError(f"--space-id {given!r} is not owner/name", remedy="e.g. acme/x")
        hub = Hub.connect(config.hub_endpoint)
        ids = candidates(
            hub,
            namespace=config.namespace,
            suffix=config.suffix,
            envs=check_env_flags(env or []),
            space_ids=space_id or [],
        )
        if not ids:
            raise UsageError(
                f"no Space of {config.namespace} ends with {config.suffix}",
                remedy="deploy first, or pass --env/--space-id",
            )
        book = open_ledger(config, str(found) if found else None, create=False)
        with out.ProgressBoard(
            console, ids, live=not json and console.is_terminal, title="verify"
        ) as board:
            results = verify_spaces(
                hub,
                ids,
                suffix=config.suffix,
                registry=PluginRegistry(get_plugin_manager()),
                timeout=probe_timeout,
                wait=build_wait,
                jobs=threads,
                on_update=board.update,
            )
        for result in results:
            note = record(book, result, by="verify")
            if note:
                console.print(note, soft_wrap=True)
        if json:
            print(jsonlib.dumps([r.as_json() for r in results], indent=2))
        else:
            print_results(console, results)
        code, why = exit_status(r.outcome.value for r in results)
        if why:
            console.print(f"[yellow]{why}[/]", soft_wrap=True)
        if code:
            raise Exit(code=code)


@task(
    help={
        **{
            k: HELP[k]
            for k in (
                "repo",
                "version",
                "namespace",
                "suffix",
                "hub_endpoint",
                "timeout",
                "wait",
                "ledger",
                "json",
            )
        },
        "staging_dir": "where staged trees go (default: ./hf-staging)",
        "env": "the env whose candidate Space to recover",
        "limit": "seconds in APP_STARTING before a Space counts as stuck (default 600)",
        "recreate": "delete and redeploy a Space still stuck after a factory reboot (needs --yes)",
        "yes": "allow --recreate to delete the Space",
    }
)
def recover(
    c: Context,
    env: str | None = None,
    repo: str | None = None,
    version: str | None = None,
    namespace: str | None = None,
    suffix: str | None = None,
    staging_dir: str | None = None,
    hub_endpoint: str | None = None,
    limit: str | None = None,
    wait: str | None = None,
    timeout: str | None = None,
    recreate: bool = False,
    yes: bool = False,
    ledger: str | None = None,
    json: bool = False,
) -> None:
    """Triage one candidate: reboot or recreate it, name a known failure, then verify it.

    Reboots a stale BUILD_ERROR or a stuck start, recreates it if allowed. Exit 1 unless it
    passes.
    """
    from releaselib.hub.client import Hub
    from releaselib.hub.deploy import canonical_fence
    from releaselib.hub.runtime import recover as recover_space
    from releaselib.stage.stage_env import stage_envs
    from releaselib.verify.candidates import DEFAULT_TIMEOUT, verify_spaces

    with reported():
        if not env:
            raise UsageError("recover needs --env NAME", remedy="e.g. --env echo_env")
        options = Options(
            repo=repo,
            version=version,
            namespace=namespace,
            suffix=suffix,
            staging_dir=staging_dir,
            hub_endpoint=hub_endpoint,
        )
        configured = release_config(c)
        config, resolution = build_config(options, configured)
        console = consoles(json)
        out.print_tuple(console, config, resolution)
        registry = PluginRegistry(get_plugin_manager())
        [staged] = stage_envs(config, select_envs(discover_envs(config.repo), [env]), registry)
        if not staged.ok:
            raise Exit(f"error: {staged.error}", code=1)
        if recreate and not yes:
            console.print("[yellow]note:[/] --recreate deletes the Space: add --yes to allow it")
        hub = Hub.connect(config.hub_endpoint)
        recovery = recover_space(
            hub,
            config,
            staged,
            signatures=[o.record for o in registry.signatures()],
            limit=number("limit", limit, configured, 600.0),
            wait=number("wait", wait, configured, 600.0),
            recreate=recreate and yes,
            on_action=lambda action: console.print(f"[bold]action:[/] {action}"),
            fence=canonical_fence(config, registry),
        )
        results = (
            verify_spaces(
                hub,
                [staged.space_id],
                suffix=config.suffix,
                registry=registry,
                timeout=number("timeout", timeout, configured, DEFAULT_TIMEOUT),
                wait=0.0,
            )
            if recovery.recovered
            else []
        )
        book = open_ledger(config, ledger, create=False)
        if results:
            record(book, results[0], by="recover", recovery=recovery.as_json())
        elif book is not None:  # not ready: no verdict; one already recorded stands
            standing = book.env(env).get("verify")
            keep = standing is not None and standing.data.get("outcome") in ("PASS", "FAIL")
            (book.attempt if keep else book.record)(
                env, "verify", status="failed", recovery=recovery.as_json()
            )
        if json:
            document = {"recovery": recovery.as_json(), "verify": [r.as_json() for r in results]}
            print(jsonlib.dumps(document, indent=2))
        else:
            print_recovery(console, recovery)
            if results:
                print_results(console, results)
        if not results or not results[0].success:
            raise Exit(code=1)
