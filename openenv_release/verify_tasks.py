"""The ``verify`` and ``recover`` tasks: flags in, releaselib.verify and hub.runtime, out."""

from __future__ import annotations

import json as jsonlib
from typing import Any

from invoke.context import Context
from invoke.exceptions import Exit

from openenv_release.common import (
    consoles,
    open_ledger,
    options,
    plugin_registry,
    release_config,
    release_tuple,
    reported,
)
from openenv_release.flags import helps, release_task
from releaselib.errors import UsageError

HELP = {
    **helps("repo", "version", "namespace", "suffix", "json", "hub_endpoint"),
    # spelt out so --help loads no releaselib.verify.candidates; tests/test_cli.py checks they match
    "probe_jobs": "how many Spaces to probe at once (default 64, or fewer Spaces: every one)",
    "env": "env whose candidate to verify (repeatable; default: every Space with the suffix)",
    "space_id": "also verify this owner/name Space (repeatable); only a candidate of this "
    "release is recorded, any other is printed",
    "timeout": "seconds per probe request (default 20; slow envs get more)",
    "wait": "seconds to wait for BUILDING/APP_STARTING Spaces (default 600)",
    "ledger": "record results in this ledger (default: the release's ledger, created if missing)",
    "staging_dir": "where the release's ledger is looked for (default: ./hf-staging)",
}


def number(name: str, flag: str | None, configured: dict[str, Any], default: float) -> float:
    """A positive number from its flag, environment variable, invoke config or default."""
    from releaselib.config import check_seconds
    from releaselib.options import pick

    return check_seconds(pick(name, flag, configured, default), f"--{name}", default)


@release_task(
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

    from releaselib import console as out
    from releaselib import step_tables as tables
    from releaselib.hub.client import Hub
    from releaselib.ledger.step_records import NOT_RECORDED, candidate_of, record_verdicts
    from releaselib.options import check_jobs, pick
    from releaselib.records import SPACE_ID
    from releaselib.stage.discover import check_env_flags
    from releaselib.verify.candidates import DEFAULT_TIMEOUT, PROBE_JOBS, candidates, verify_spaces
    from releaselib.verify.verdicts import exit_status
    from releaselib.verify.verify_tuple import verify_config

    with reported():
        configured = release_config(c)
        config, resolution, found = verify_config(
            options(
                repo=repo,
                version=version,
                namespace=namespace,
                suffix=suffix,
                hub_endpoint=hub_endpoint,
                staging_dir=staging_dir,
            ),
            configured,
            ledger=ledger,
        )
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
        release_ledger = open_ledger(config, str(found) if found else None)
        with out.ProgressBoard(
            console, ids, live=not json and console.is_terminal, title="verify"
        ) as board:
            results = verify_spaces(
                hub,
                ids,
                suffix=config.suffix,
                registry=plugin_registry(),
                timeout=probe_timeout,
                wait=build_wait,
                jobs=threads,
                on_update=board.update,
            )
        for result, stands in record_verdicts(release_ledger, results, by="verify"):
            if stands == NOT_RECORDED:
                console.print(
                    f"{result.space_id}: not {result.env}'s candidate in this release "
                    f"({candidate_of(release_ledger, result.env)}); its {result.outcome.value} "
                    "is printed, not recorded",
                    markup=False,
                    soft_wrap=True,
                )
            elif stands:
                console.print(
                    tables.verdict_stands(result.env, result.outcome.value, stands), markup=False
                )
        if json:
            print(jsonlib.dumps([r.as_json() for r in results], indent=2))
        else:
            tables.print_results(console, results)
        code, why = exit_status(r.outcome.value for r in results)
        if why:
            console.print(f"[yellow]{why}[/]", soft_wrap=True)
        if code:
            raise Exit(code=code)


@release_task(
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
    from releaselib import console as out
    from releaselib import step_tables as tables
    from releaselib.hub.client import Hub
    from releaselib.hub.deploy import canonical_fence
    from releaselib.hub.runtime import recover as recover_space
    from releaselib.ledger.step_records import record_recovery
    from releaselib.stage.discover import discover_envs, select_envs
    from releaselib.stage.stage_env import stage_envs
    from releaselib.verify.candidates import DEFAULT_TIMEOUT, verify_spaces

    with reported():
        if not env:
            raise UsageError("recover needs --env NAME", remedy="e.g. --env echo_env")
        configured = release_config(c)
        config, resolution = release_tuple(
            c,
            ledger=ledger,
            repo=repo,
            version=version,
            namespace=namespace,
            suffix=suffix,
            staging_dir=staging_dir,
            hub_endpoint=hub_endpoint,
        )
        console = consoles(json)
        out.print_tuple(console, config, resolution)
        registry = plugin_registry()
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
            on_action=lambda action: console.print(f"action: {action}", markup=False),
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
        record_recovery(open_ledger(config, ledger), env, recovery.as_json(), results)
        if json:
            document = {"recovery": recovery.as_json(), "verify": [r.as_json() for r in results]}
            print(jsonlib.dumps(document, indent=2))
        else:
            tables.print_recovery(console, recovery)
            if results:
                tables.print_results(console, results)
        if not results or not results[0].success:
            raise Exit(code=1)
