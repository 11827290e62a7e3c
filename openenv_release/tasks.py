"""The Invoke tasks: parse flags, build the release tuple, call releaselib, print.

The same collection runs as ``invoke <task>`` from the project root (tasks.py) and as the
console script ``openenv-release <task>`` from anywhere.
"""

from __future__ import annotations

import json as jsonlib
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from invoke.collection import Collection
from invoke.context import Context
from invoke.exceptions import Exit
from invoke.tasks import task
from rich.console import Console

from openenv_release.localhub_tasks import localhub
from openenv_release.plugin_tasks import plugin
from releaselib import console as out
from releaselib.deploy import check_repo_id, deploy_all, plan_all
from releaselib.discover import discover_envs, select_envs
from releaselib.errors import ReleaseError, UsageError
from releaselib.hub import Hub
from releaselib.options import Options, build_config, find_repo, pick
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.stage import stage_envs

TUPLE_HELP = {
    "repo": "OpenEnv checkout (default: the current directory, if it is one)",
    "env": "env to work on (repeatable; default: every deployable env)",
    "all": "every deployable env (the default when no --env is given)",
    "version": "release version (default: the checkout's pyproject version)",
    "namespace": "Hub namespace of the Spaces (default: openenv)",
    "suffix": "Space suffix (default: -<version>)",
    "base_image": "base image repository (default: ghcr.io/huggingface/openenv-base)",
    "base_sha": "base image tag/sha instead of latest",
    "staging_dir": "where staged trees go (default: ./hf-staging)",
    "json": "print one JSON document on stdout instead of tables",
    "repo_id": "deploy the one --env to this owner/name instead of <namespace>/<env><suffix>",
    "private": "make the Spaces private (the default)",
    "public": "make the Spaces public",
    "jobs": "how many envs to work on in parallel (default 4)",
    "hub_endpoint": "Hub URL (default: HF_ENDPOINT, else https://huggingface.co)",
    "dry_run": "print the plan; change nothing",
}


def helps(*names: str) -> dict[str, str]:
    return {name: TUPLE_HELP[name] for name in names}


@contextmanager
def reported() -> Iterator[None]:
    """Turn a ReleaseError into one line and its exit code; no traceback unless --debug."""
    try:
        yield
    except Exit:
        raise
    except ReleaseError as exc:
        raise Exit(f"error: {exc.one_line()}", code=exc.exit_code) from None
    except KeyboardInterrupt:
        raise Exit("interrupted", code=130) from None
    except Exception as exc:
        if logging.getLogger().isEnabledFor(logging.DEBUG) or os.environ.get(
            "OPENENV_RELEASE_DEBUG"
        ):
            raise
        raise Exit(
            f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)",
            code=70,
        ) from None


def consoles(as_json: bool) -> Console:
    """Where human output goes: stdout, or stderr when stdout carries JSON."""
    return Console(stderr=as_json, highlight=False)


def release_config(c: Context) -> dict[str, Any]:
    section = c.config.get("release", {})
    return dict(section) if section else {}


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
                                for t in registry.profile(s.name).targets
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
    iterable=["env"],
    help=helps(
        "repo",
        "env",
        "all",
        "version",
        "base_image",
        "base_sha",
        "namespace",
        "suffix",
        "staging_dir",
        "json",
    ),
)
def stage(
    c: Context,
    repo: str | None = None,
    env: list[str] | None = None,
    all_: bool = False,
    version: str | None = None,
    base_image: str | None = None,
    base_sha: str | None = None,
    namespace: str | None = None,
    suffix: str | None = None,
    staging_dir: str | None = None,
    json: bool = False,
) -> None:
    """Stage envs into Space-ready trees (the checkout is never modified)."""
    with reported():
        options = Options(
            repo=repo,
            version=version,
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
        staged = stage_envs(config, specs, registry)
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
    iterable=["env"],
    help=helps("repo", "env", "all", "version", "namespace", "suffix", "repo_id", "private",
               "public", "jobs", "staging_dir", "hub_endpoint", "dry_run", "json"),
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
    dry_run: bool = False,
    json: bool = False,
) -> None:
    """Stage, then push private version-suffixed candidate Spaces, sending only what changed."""
    with reported():
        if private and public:
            raise UsageError("--private and --public contradict each other", remedy="pass one")
        options = Options(
            repo=repo, version=version, namespace=namespace, suffix=suffix, jobs=jobs,
            staging_dir=staging_dir, hub_endpoint=hub_endpoint,
            private=False if public else True if private else None,
        )
        config, resolution = build_config(options, release_config(c))
        console = consoles(json)
        out.print_tuple(console, config, resolution)
        specs = select_envs(discover_envs(config.repo), [] if all_ else env or [])
        target = check_repo_id(repo_id, [s.name for s in specs]) if repo_id else None
        staged = stage_envs(config, specs, PluginRegistry(get_plugin_manager()))
        hub = Hub.connect(config.hub_endpoint)
        if dry_run:
            results = plan_all(hub, config, staged, repo_id=target)
        else:
            results = deploy_all(
                hub, config, staged, repo_id=target,
                on_done=lambda d: console.print(out.deploy_line(d)),
            )
        if json:
            print(jsonlib.dumps(
                {"config": config.as_json(), "envs": [d.as_json() for d in results]}, indent=2
            ))
        else:
            out.print_deployed(console, results, dry_run=dry_run)
        if any(not d.ok for d in results):
            raise Exit(code=1)


@task(help=helps("json"))
def plugins(c: Context, json: bool = False) -> None:
    """List the plugins with their envs, fixes, probes and canonical targets."""
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
ns.configure({"release": {}})
