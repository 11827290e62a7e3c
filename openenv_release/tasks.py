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
from invoke.tasks import task

from openenv_release.common import (
    consoles,
    helps,
    open_ledger,
    release_config,
    reported,
    visibility,
)
from openenv_release.localhub_tasks import localhub
from openenv_release.plugin_tasks import plugin
from openenv_release.promote_tasks import cleanup, collection, pin, promote
from openenv_release.release_tasks import rehearse, release, report, status
from openenv_release.verify_tasks import recover, verify
from releaselib import console as out
from releaselib.options import Options, build_config, find_repo, pick
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.stage.discover import discover_envs, select_envs

if TYPE_CHECKING:
    from releaselib.hub.deploy import Deployed


@task(help=helps("repo", "json"))
def envs(c: Context, repo: str | None = None, json: bool = False) -> None:
    """List every env under envs/: deployable or not and why, its plugin and canonical targets."""
    with reported():
        checkout = find_repo(pick("repo", repo, release_config(c)))
        registry = PluginRegistry(get_plugin_manager())
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


@task(
    iterable=["env", "allow_secret"],
    help=helps(
        "repo",
        "env",
        "all",
        "version",
        "ref",
        "base_image",
        "base_sha",
        "namespace",
        "suffix",
        "staging_dir",
        "json",
        "no_wait",
        "allow_secret",
    ),
)
def stage(
    c: Context,
    repo: str | None = None,
    env: list[str] | None = None,
    all_: bool = False,
    version: str | None = None,
    ref: str | None = None,
    base_image: str | None = None,
    base_sha: str | None = None,
    namespace: str | None = None,
    suffix: str | None = None,
    staging_dir: str | None = None,
    json: bool = False,
    no_wait: bool = False,
    allow_secret: list[str] | None = None,
) -> None:
    """Stage envs into Space-ready trees (the checkout is never modified)."""
    from releaselib.locks import run_locks
    from releaselib.stage.stage_env import StageRun, allow_flags, stage_envs

    with reported():
        options = Options(
            repo=repo,
            version=version,
            ref=ref,
            base_image=base_image,
            base_sha=base_sha,
            namespace=namespace,
            suffix=suffix,
            staging_dir=staging_dir,
        )
        config, resolution = build_config(options, release_config(c))
        console = consoles(json)
        out.print_tuple(console, config, resolution)
        registry = PluginRegistry(get_plugin_manager())
        specs = select_envs(discover_envs(config.repo), [] if all_ else env or [])
        run = StageRun(allow_flags(allow_secret or [], config.repo))
        with run_locks(config.staging_dir, None, wait=not no_wait, on_wait=console.print):
            staged = stage_envs(config, specs, registry, run)
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


@task(
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
) -> None:
    """Stage, then push private candidate Spaces, sending only what changed.

    Results go to the release's ledger when it exists (or to --ledger).
    """
    from releaselib.hub.client import Hub
    from releaselib.hub.deploy import canonical_fence, check_repo_id, deploy_all, plan_all
    from releaselib.ledger.ledger import ledger_path as ledger_file
    from releaselib.locks import run_locks
    from releaselib.release import record_deploy, record_stage
    from releaselib.stage.stage_env import StageRun, allow_flags, stage_envs

    with reported():
        options = Options(
            repo=repo,
            version=version,
            namespace=namespace,
            suffix=suffix,
            jobs=jobs,
            staging_dir=staging_dir,
            hub_endpoint=hub_endpoint,
            private=visibility(private, public),
        )
        config, resolution = build_config(options, release_config(c))
        console = consoles(json)
        out.print_tuple(console, config, resolution)
        specs = select_envs(discover_envs(config.repo), [] if all_ else env or [])
        registry = PluginRegistry(get_plugin_manager())
        fence = canonical_fence(config, registry)
        target = check_repo_id(repo_id, [s.name for s in specs], fence) if repo_id else None
        run = StageRun(allow_flags(allow_secret or [], config.repo))
        ledger_path = ledger_file(config, ledger)
        ids = [target or config.space_id(s.name) for s in specs]
        with (
            run_locks(config.staging_dir, ledger_path, wait=not no_wait, on_wait=console.print),
            out.ProgressBoard(console, ids, live=not json and console.is_terminal) as board,
        ):
            for space_id in ids:
                board.update(space_id, "staging")
            staged = stage_envs(config, specs, registry, run)
            for space_id, s in zip(ids, staged, strict=True):
                board.update(space_id, "staged" if s.ok else f"failed: {s.error}")
            hub = Hub.connect(config.hub_endpoint)
            if dry_run:
                results = plan_all(hub, config, staged, fence=fence, repo_id=target)
            else:
                book = open_ledger(config, ledger, create=False)

                def done(d: Deployed) -> None:
                    board.update(d.space_id, out.deploy_status(d))
                    if book is not None and target is None:
                        record_deploy(book, d)

                if book is not None and target is None:
                    for s in staged:
                        record_stage(book, s)
                results = deploy_all(
                    hub,
                    config,
                    staged,
                    fence=fence,
                    repo_id=target,
                    on_done=done,
                    on_progress=board.update,
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


@task(help=helps("json"))
def plugins(c: Context, json: bool = False) -> None:
    """List the plugins with their envs, fixes, probes, canonical targets and needs."""
    with reported():
        registry = PluginRegistry(get_plugin_manager())
        rows = registry.describe()
        if json:
            print(jsonlib.dumps(rows, indent=2))
            return
        out.print_plugins(consoles(False), rows)


ns = Collection(envs, stage, deploy, plugins)
ns.add_collection(localhub)
ns.add_collection(plugin)
ns.add_task(verify)
ns.add_task(recover)
for step in (promote, collection, pin, cleanup):
    ns.add_task(step)
for step in (release, status, report, rehearse):
    ns.add_task(step)
ns.configure({"release": {}})
