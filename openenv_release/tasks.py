"""The Invoke tasks: parse flags, build the release tuple, call releaselib, print.

The same collection runs as ``invoke <task>`` from the project root (tasks.py) and as the
console script ``openenv-release <task>`` from anywhere.
"""

from __future__ import annotations

import json as jsonlib
from typing import TYPE_CHECKING

from invoke.collection import Collection
from invoke.context import Context
from invoke.exceptions import Exit

from openenv_release.board_tasks import report, status
from openenv_release.common import (
    consoles,
    open_ledger,
    plugin_registry,
    release_config,
    release_tuple,
    reported,
    visibility,
)
from openenv_release.flags import helps, release_task
from openenv_release.localhub_tasks import localhub
from openenv_release.pin_tasks import cleanup, pin
from openenv_release.plugin_tasks import plugin
from openenv_release.promote_tasks import collection, promote, rollback
from openenv_release.release_tasks import rehearse, release
from openenv_release.verify_tasks import recover, verify

if TYPE_CHECKING:
    from releaselib.hub.deploy import Deployed


@release_task(help=helps("repo", "json"))
def envs(c: Context, repo: str | None = None, json: bool = False) -> None:
    """List every env under envs/: deployable or not and why, its plugin and canonical targets."""
    from releaselib import console as out
    from releaselib.options import find_repo, pick, repo_source
    from releaselib.stage.discover import discover_envs

    with reported():
        configured = release_config(c)
        checkout = find_repo(pick("repo", repo, configured), repo_source(repo, configured))
        registry = plugin_registry()
        specs = discover_envs(checkout)
        if json:
            print(
                jsonlib.dumps(
                    [
                        {
                            "env": s.name,
                            "deployable": s.deployable,
                            "why": s.reason,
                            "plugin": registry.plugin_for(s.name),
                            "canonical_targets": [
                                {"repo": t.repo, "variables": t.env_vars}
                                for t in registry.targets(s.name)
                            ],
                        }
                        for s in specs
                    ],
                    indent=2,
                )
            )
            return
        out.print_envs(consoles(False), specs, registry)


@release_task(
    iterable=["env", "allow_secret"],
    help=helps(
        "repo",
        "env",
        "all",
        "version",
        "ref",
        "dist",
        "base_image",
        "base_sha",
        "namespace",
        "suffix",
        "staging_dir",
        "json",
        "no_wait",
        "allow_secret",
        "no_lock",
    ),
)
def stage(
    c: Context,
    repo: str | None = None,
    env: list[str] | None = None,
    all_: bool = False,
    version: str | None = None,
    ref: str | None = None,
    dist: str | None = None,
    base_image: str | None = None,
    base_sha: str | None = None,
    namespace: str | None = None,
    suffix: str | None = None,
    staging_dir: str | None = None,
    json: bool = False,
    no_wait: bool = False,
    allow_secret: list[str] | None = None,
    no_lock: bool = False,
) -> None:
    """Stage envs into Space-ready trees (the checkout is never modified)."""
    from releaselib import console as out
    from releaselib.ledger.paths import default_path
    from releaselib.ledger.step_records import record_stage
    from releaselib.locks import run_locks
    from releaselib.stage.discover import discover_envs, select_envs
    from releaselib.stage.secret_gate import allow_flags
    from releaselib.stage.stage_env import StageRun, stage_envs

    with reported():
        config, resolution = release_tuple(
            c,
            repo=repo,
            version=version,
            ref=ref,
            dist=dist,
            base_image=base_image,
            base_sha=base_sha,
            namespace=namespace,
            suffix=suffix,
            staging_dir=staging_dir,
        )
        console = consoles(json)
        out.print_tuple(console, config, resolution)
        specs = select_envs(discover_envs(config.repo), [] if all_ else env or [])
        run = StageRun(allow_flags(allow_secret or [], config.repo), lock=not no_lock)
        with run_locks(
            config.staging_dir, default_path(config), wait=not no_wait, on_wait=console.print
        ):
            staged = stage_envs(config, specs, plugin_registry(), run)
            ledger = open_ledger(config, None)
            for s in staged:
                record_stage(ledger, s)
        if json:
            print(
                jsonlib.dumps(
                    {"config": config.as_json(), "envs": [s.as_json() for s in staged]}, indent=2
                )
            )
        else:
            out.print_staged(console, staged)
        if any(not s.ok for s in staged):
            raise Exit(code=1)


@release_task(
    iterable=["env", "allow_secret"],
    help=helps(
        "repo",
        "env",
        "all",
        "version",
        "namespace",
        "suffix",
        "repo_id",
        "private",
        "public",
        "jobs",
        "staging_dir",
        "hub_endpoint",
        "ledger",
        "dry_run",
        "json",
        "no_wait",
        "allow_secret",
        "no_lock",
    ),
)
def deploy(
    c: Context,
    repo: str | None = None,
    env: list[str] | None = None,
    all_: bool = False,
    version: str | None = None,
    namespace: str | None = None,
    suffix: str | None = None,
    repo_id: str | None = None,
    private: bool = False,
    public: bool = False,
    jobs: int | None = None,
    staging_dir: str | None = None,
    hub_endpoint: str | None = None,
    ledger: str | None = None,
    dry_run: bool = False,
    json: bool = False,
    no_wait: bool = False,
    allow_secret: list[str] | None = None,
    no_lock: bool = False,
) -> None:
    """Stage, then push private candidate Spaces, sending only what changed.

    Each env's stage and deploy are recorded in the release's ledger (or --ledger); not with
    --repo-id, which deploys outside the release.
    """
    from releaselib import console as out
    from releaselib.hub.client import Hub
    from releaselib.hub.deploy import canonical_fence, check_repo_id, deploy_all, plan_all
    from releaselib.ledger.paths import ledger_path
    from releaselib.ledger.step_records import record_deploy, record_stage
    from releaselib.locks import run_locks
    from releaselib.stage.discover import discover_envs, select_envs
    from releaselib.stage.secret_gate import allow_flags
    from releaselib.stage.stage_env import StageRun, stage_envs

    with reported():
        config, resolution = release_tuple(
            c,
            ledger=ledger,
            repo=repo,
            version=version,
            namespace=namespace,
            suffix=suffix,
            jobs=jobs,
            staging_dir=staging_dir,
            hub_endpoint=hub_endpoint,
            private=visibility(private, public),
        )
        console = consoles(json)
        out.print_tuple(console, config, resolution)
        specs = select_envs(discover_envs(config.repo), [] if all_ else env or [])
        registry = plugin_registry()
        fence = canonical_fence(config, registry)
        target = check_repo_id(repo_id, [s.name for s in specs], fence) if repo_id else None
        run = StageRun(allow_flags(allow_secret or [], config.repo), lock=not no_lock)
        ledger_file = ledger_path(config, ledger)
        ids = [target or config.space_id(s.name) for s in specs]
        with (
            run_locks(
                config.staging_dir,
                ledger_file,
                wait=not no_wait,
                on_wait=console.print,
            ),
            out.ProgressBoard(console, ids, live=not json and console.is_terminal) as board,
        ):
            for space_id in ids:
                board.update(space_id, "staging")
            staged = stage_envs(config, specs, registry, run)
            for space_id, s in zip(ids, staged, strict=True):
                board.update(space_id, "staged" if s.ok else f"failed: {s.error}")
            release_ledger = open_ledger(config, ledger) if not dry_run and target is None else None
            if release_ledger is not None:
                for s in staged:
                    record_stage(release_ledger, s)

            def done(d: Deployed) -> None:
                board.update(d.space_id, out.deploy_status(d))
                if release_ledger is not None:
                    record_deploy(release_ledger, d)

            hub = Hub.connect(config.hub_endpoint)
            results = (
                plan_all(hub, config, staged, fence=fence, repo_id=target)
                if dry_run
                else deploy_all(
                    hub,
                    config,
                    staged,
                    fence=fence,
                    repo_id=target,
                    on_done=done,
                    on_progress=board.update,
                )
            )
        if json:
            print(
                jsonlib.dumps(
                    {"config": config.as_json(), "envs": [d.as_json() for d in results]}, indent=2
                )
            )
        else:
            out.print_deployed(console, results, dry_run=dry_run)
        if any(not d.ok for d in results):
            raise Exit(code=1)


@release_task(help=helps("json"))
def plugins(c: Context, json: bool = False) -> None:
    """List the plugins with their envs, fixes, probes, canonical targets and needs."""
    from releaselib import console as out

    with reported():
        rows = plugin_registry().describe()
        if json:
            print(jsonlib.dumps(rows, indent=2))
            return
        out.print_plugins(consoles(False), rows)


ns = Collection(envs, stage, deploy, plugins)
ns.add_collection(localhub)
ns.add_collection(plugin)
ns.add_task(verify)
ns.add_task(recover)
for step in (promote, rollback, collection, pin, cleanup):
    ns.add_task(step)
for step in (release, status, report, rehearse):
    ns.add_task(step)
ns.configure({"release": {}})
