"""The ``pin`` and ``cleanup`` tasks: verdicts from the release's ledger in, the checkout's pins
and the candidates' archive or deletion out (``releaselib.publish.steps`` records each)."""

from __future__ import annotations

import json as jsonlib

from invoke.context import Context
from invoke.exceptions import Exit

from openenv_release.common import (
    decision_setup,
    plugin_registry,
    print_json,
    reported,
)
from openenv_release.flags import DECIDE_HELP, helps, release_task
from releaselib.errors import UsageError


@release_task(
    iterable=["env"],
    help=helps(
        "repo",
        "version",
        "namespace",
        "suffix",
        "env",
        "staging_dir",
        "ledger",
        "hub_endpoint",
        "json",
        "allow_embedded_hub",
        table=DECIDE_HELP,
        commit="commit the changed pyprojects in one git commit on the current branch",
    ),
)
def pin(
    c: Context,
    version: str | None = None,
    env: list[str] | None = None,
    commit: bool = False,
    repo: str | None = None,
    namespace: str | None = None,
    suffix: str | None = None,
    staging_dir: str | None = None,
    ledger: str | None = None,
    hub_endpoint: str | None = None,
    json: bool = False,
    allow_embedded_hub: bool = False,
) -> None:
    """Pin FAILed envs below the release in the checkout; lift old pins of passing ones.

    Prints the diff. The only task that writes to the checkout.
    """
    from releaselib import step_tables as tables
    from releaselib.hub.client import Hub
    from releaselib.publish.steps import pin_step

    with reported():
        config, console, release_ledger = decision_setup(
            c,
            json,
            ledger,
            repo=repo,
            version=version,
            namespace=namespace,
            suffix=suffix,
            staging_dir=staging_dir,
            hub_endpoint=hub_endpoint,
        )
        decisions, sha = pin_step(
            Hub.connect(config.hub_endpoint),
            config,
            release_ledger,
            envs=env or None,
            commit=commit,
            embedded_ok=allow_embedded_hub,
        )
        if json:
            doc = {
                "config": config.as_json(),
                "pins": [d.as_json() for d in decisions],
                "commit": sha,
            }
            print(jsonlib.dumps(doc, indent=2))
        else:
            tables.print_pins(console, decisions, sha, commit=commit)
        if any(d.error for d in decisions):
            raise Exit(code=1)


@release_task(
    help=helps(
        "repo",
        "version",
        "namespace",
        "suffix",
        "staging_dir",
        "ledger",
        "hub_endpoint",
        "json",
        table=DECIDE_HELP,
        archive="make promoted candidates private and pause them",
        delete="delete promoted candidates",
        yes="do it; without --yes only the plan is printed",
    ),
)
def cleanup(
    c: Context,
    version: str | None = None,
    archive: bool = False,
    delete: bool = False,
    yes: bool = False,
    repo: str | None = None,
    namespace: str | None = None,
    suffix: str | None = None,
    staging_dir: str | None = None,
    ledger: str | None = None,
    hub_endpoint: str | None = None,
    json: bool = False,
) -> None:
    """Archive or delete the candidates whose canonical promotion is complete."""
    from releaselib import step_tables as tables
    from releaselib.hub.client import Hub
    from releaselib.publish.steps import cleanup_step

    with reported():
        if archive == delete:
            raise UsageError(
                "pass exactly one of --archive and --delete", remedy="e.g. cleanup --archive --yes"
            )
        config, console, release_ledger = decision_setup(
            c,
            json,
            ledger,
            repo=repo,
            version=version,
            namespace=namespace,
            suffix=suffix,
            staging_dir=staging_dir,
            hub_endpoint=hub_endpoint,
        )
        results = cleanup_step(
            Hub.connect(config.hub_endpoint),
            config,
            release_ledger,
            plugin_registry(),
            action="delete" if delete else "archive",
            apply=yes,
        )
        if json:
            print_json(config, "cleanup", results)
        else:
            tables.print_cleanup(console, results, applied=yes)
        if any(r.status == "failed" for r in results):
            raise Exit(code=1)
