"""The board and the briefing: ``status`` and ``report`` read the ledger and one Hub listing."""

from __future__ import annotations

import json as jsonlib

from invoke.context import Context

from openenv_release.common import consoles, ledger_setup, plugin_registry, reported
from openenv_release.flags import helps, release_task
from releaselib import console as out

#: What status and report say when there is no ledger yet: every step makes one.
NO_LEDGER_YET = "run a step (stage, deploy, verify) or `release` first, or pass --ledger PATH"


@release_task(
    help=helps("repo", "version", "namespace", "staging_dir", "hub_endpoint", "ledger", "json")
)
def status(
    c: Context,
    repo: str | None = None,
    version: str | None = None,
    namespace: str | None = None,
    staging_dir: str | None = None,
    hub_endpoint: str | None = None,
    ledger: str | None = None,
    json: bool = False,
) -> None:
    """The board: env x step from the ledger and one Hub listing, with each env's next action."""
    from releaselib.hub.client import Hub
    from releaselib.ledger.report import NO_TOKEN_NOTE
    from releaselib.ledger.status import listed_board

    with reported():
        config, _, release_ledger = ledger_setup(
            c,
            "status",
            ledger,
            remedy=NO_LEDGER_YET,
            repo=repo,
            version=version,
            namespace=namespace,
            staging_dir=staging_dir,
            hub_endpoint=hub_endpoint,
        )
        hub = Hub.connect(config.hub_endpoint)
        spaces, anonymous = hub.list_spaces(config.namespace), not hub.has_token
        registry = plugin_registry()
        rows = listed_board(release_ledger, spaces, config, anonymous=anonymous, registry=registry)
        if not hub.has_token:
            consoles(True).print(NO_TOKEN_NOTE, markup=False, soft_wrap=True)
        if json:
            print(jsonlib.dumps([r.as_json() for r in rows], indent=2))
        else:
            out.print_board(consoles(False), rows)


@release_task(
    help=helps("repo", "version", "namespace", "staging_dir", "hub_endpoint", "ledger", "json")
)
def report(
    c: Context,
    repo: str | None = None,
    version: str | None = None,
    namespace: str | None = None,
    staging_dir: str | None = None,
    hub_endpoint: str | None = None,
    ledger: str | None = None,
    json: bool = False,
) -> None:
    """Write the release briefing (Markdown and JSON) next to the ledger.

    It is rebuilt from the ledger and one Hub listing, so runtimes are the Hub's now.
    """
    from releaselib.hub.client import Hub
    from releaselib.ledger.paths import briefing_stem
    from releaselib.ledger.report import NO_TOKEN_NOTE, current_report, write_briefing

    with reported():
        config, resolution, release_ledger = ledger_setup(
            c,
            "report",
            ledger,
            remedy=NO_LEDGER_YET,
            repo=repo,
            version=version,
            namespace=namespace,
            staging_dir=staging_dir,
            hub_endpoint=hub_endpoint,
        )
        hub = Hub.connect(config.hub_endpoint)
        data = current_report(hub, config, release_ledger, ref_reason=resolution.reason)
        if not hub.has_token:
            consoles(True).print(NO_TOKEN_NOTE, markup=False, soft_wrap=True)
        stem = briefing_stem(release_ledger.path)
        markdown, as_json = write_briefing(data, release_ledger.path.parent, stem)
        if json:
            print(jsonlib.dumps(data, indent=2))
        else:
            print(f"briefing: {markdown}\njson: {as_json}")
