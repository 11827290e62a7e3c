"""What every task shares: flag help, the error policy, where output goes, invoke config."""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from invoke.context import Context
from invoke.exceptions import Exit
from rich.console import Console

from releaselib.config import ReleaseConfig
from releaselib.errors import ReleaseError, UsageError, redact

if TYPE_CHECKING:
    from releaselib.ledger.ledger import Ledger


#: release's steps, spelt out so that --help need not import releaselib.release (a test checks)
RELEASE_STEPS = "stage, deploy, verify, promote, collection, pin, report"
FLAG_HELP = {
    "repo": "OpenEnv checkout (default: the current directory, if it is one)",
    "env": "env to work on (repeatable; default: every deployable env)",
    "all": "every deployable env (the default when no --env is given)",
    "version": "release version (default: the checkout's pyproject version)",
    "namespace": "Hub namespace of the Spaces (default: openenv)",
    "suffix": "Space suffix (default: -<version>)",
    "base_image": "base image repository (default: ghcr.io/huggingface/openenv-base)",
    "base_sha": "base image tag/sha instead of latest",
    "ref": "OpenEnv git ref to pin to (sha, branch or tag) when it differs from the version",
    "staging_dir": "where staged trees go (default: ./hf-staging)",
    "json": "print one JSON document on stdout instead of tables",
    "repo_id": "deploy the one --env to this owner/name instead of <namespace>/<env><suffix>",
    "private": "make the Spaces private (the default)",
    "public": "make the Spaces public",
    "jobs": "how many envs to work on in parallel (default 4)",
    "hub_endpoint": "Hub URL (default: HF_ENDPOINT, else https://huggingface.co)",
    "dry_run": "print the plan; change nothing",
    "from_": f"redo from this step on ({RELEASE_STEPS})",
    "until": "stop after this step",
    "ledger": "the ledger file (default: <staging dir>/ledger-<namespace>-<version>.json)",
    "timeout": "seconds per probe request (slow envs get their plugin's longer timeout)",
    "wait": "seconds to wait for Spaces to build before calling them INCONCLUSIVE",
    "create_missing": "create canonical Spaces that do not exist yet",
    "commit_pins": "commit the pins in the checkout (one commit listing the envs)",
    "allow_embedded_hub": "let pin write the checkout on verdicts from the embedded Hub "
    "(a stand-in build, no evidence about the real Hub; rehearse needs no flag: it pins a "
    "private copy)",
    "scenario": "a YAML/JSON scenario that makes the embedded Hub misbehave (faults, stuck builds)",
    "no_wait": "fail at once, naming the holder's pid, when another run holds the staging dir "
    "or the ledger (default: wait for it)",
    "allow_secret": "a checkout file whose secret-scan finding is a known false positive "
    "(repeatable; recorded in the ledger and the briefing)",
    "keep": "the rehearsal's folder (checkout, staging, ledger, briefing; default: a new temp dir)",
}


def helps(*names: str, table: Mapping[str, str] = FLAG_HELP, **more: str) -> dict[str, str]:
    """Invoke ``help=`` for the flags ``names`` (from ``table``), plus ``more``."""
    return {**{name: table[name] for name in names}, **more}


@contextmanager
def reported() -> Iterator[None]:
    """Turn a ReleaseError into one line and its exit code; no traceback unless --debug, and
    no Hub token in either."""
    try:
        yield
    except (Exit, BrokenPipeError):  # cli.main ends a broken pipe quietly
        raise
    except ReleaseError as exc:
        raise Exit(f"error: {exc.one_line()}", code=exc.exit_code) from None
    except KeyboardInterrupt:
        raise Exit("interrupted", code=130) from None
    except Exception as exc:
        if logging.getLogger().isEnabledFor(logging.DEBUG) or os.environ.get(
            "OPENENV_RELEASE_DEBUG"
        ):
            sys.stderr.write(redact("".join(traceback.format_exception(exc))))
            raise Exit(code=70) from None
        raise Exit(
            redact(
                f"internal error: {type(exc).__name__}: {exc} "
                "(rerun with --debug for the traceback)"
            ),
            code=70,
        ) from None


def consoles(as_json: bool) -> Console:
    """Where human output goes: stdout, or stderr when stdout carries JSON."""
    return Console(stderr=as_json, highlight=False)


def release_config(c: Context) -> dict[str, Any]:
    section = c.config.get("release", {})
    return dict(section) if section else {}


def open_ledger(config: ReleaseConfig, given: str | None, *, create: bool) -> Ledger | None:
    """``--ledger PATH``, else the release's default ledger: created when ``create``, else
    only when it already exists (steps record into a release's ledger "when it exists")."""
    from releaselib.ledger.ledger import Ledger, default_path
    from releaselib.release import release_key
    from releaselib.space_ids import refuse_token

    refuse_token("--ledger", given)
    path = Path(given) if given else default_path(config)
    if given or create or path.exists():
        return Ledger.load(path, release_key(config))
    return None


def require_ledger(config: ReleaseConfig, given: str | None, *, remedy: str) -> Ledger:
    """The release's ledger; UsageError naming where it was looked for when there is none."""
    from releaselib.ledger.ledger import default_path

    ledger = open_ledger(config, given, create=False)
    if ledger is None:
        raise UsageError(f"no release ledger at {default_path(config)}", remedy=remedy)
    return ledger


def visibility(private: bool, public: bool) -> bool | None:
    """``--private``/``--public`` as the release tuple's ``private`` (None: neither given)."""
    if private and public:
        raise UsageError("--private and --public contradict each other", remedy="pass one")
    return False if public else True if private else None
