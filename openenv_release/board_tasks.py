"""The board and the briefing: ``status`` and ``report`` read the ledger and one Hub listing."""

from __future__ import annotations

import json as jsonlib
from typing import TYPE_CHECKING, Any

from invoke.context import Context

from openenv_release.common import consoles, ledger_setup, plugin_registry, reported
from openenv_release.flags import helps, release_task

if TYPE_CHECKING:
    from releaselib.config import RefResolution, ReleaseConfig
    from releaselib.hub.client import Hub
    from releaselib.ledger.ledger import Ledger

#: What status and report say when there is no ledger yet: every step makes one.
NO_LEDGER_YET = "run a step (stage, deploy, verify) or `release` first, or pass --ledger PATH"


def opened(
    c: Context, task: str, ledger: str | None, **flags: Any
) -> tuple[ReleaseConfig, RefResolution, Ledger, Hub]:
    """What status and report both start from: the tuple, the release's ledger, the Hub."""
    from releaselib.hub.client import Hub

    config, resolution, release_ledger = ledger_setup(
        c, task, ledger, remedy=NO_LEDGER_YET, **flags
    )
    return config, resolution, release_ledger, Hub.connect(config.hub_endpoint)


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
    from releaselib import console as out
    from releaselib.ledger.report import NO_TOKEN_NOTE
    from releaselib.ledger.status import listed_board

    with reported():
        config, _, release_ledger, hub = opened(
            c, "status", ledger, repo=repo, version=version, namespace=namespace,
            staging_dir=staging_dir, hub_endpoint=hub_endpoint,
        )  # fmt: skip
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
    from releaselib.ledger.paths import briefing_stem
    from releaselib.ledger.report import NO_TOKEN_NOTE, current_report, write_briefing

    with reported():
        config, resolution, release_ledger, hub = opened(
            c, "report", ledger, repo=repo, version=version, namespace=namespace,
            staging_dir=staging_dir, hub_endpoint=hub_endpoint,
        )  # fmt: skip
        data = current_report(hub, config, release_ledger, ref_reason=resolution.reason)
        if not hub.has_token:
            consoles(True).print(NO_TOKEN_NOTE, markup=False, soft_wrap=True)
        stem = briefing_stem(release_ledger.path)
        markdown, as_json = write_briefing(data, release_ledger.path.parent, stem)
        if json:
            print(jsonlib.dumps(data, indent=2))
        else:
            print(f"briefing: {markdown}\njson: {as_json}")
