"""What every task shares: the error policy, where output goes, invoke config, and the one place
each task gets its release tuple, plugins and ledger from."""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from invoke.context import Context
from invoke.exceptions import Exit

from releaselib.errors import ReleaseError, UsageError, redact

if TYPE_CHECKING:  # the rest is imported when a task runs, so that --help starts fast
    from rich.console import Console

    from releaselib.config import RefResolution, ReleaseConfig
    from releaselib.ledger.ledger import Ledger
    from releaselib.options import Options
    from releaselib.plugins import PluginRegistry


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
    from releaselib.console import make_console

    return make_console(stderr=as_json)


def release_config(c: Context) -> dict[str, Any]:
    """The ``release`` section of invoke's config files."""
    section = c.config.get("release", {})
    return dict(section) if section else {}


def options(**flags: Any) -> Options:
    """The release-tuple flags a task received (those it does not have stay None)."""
    from releaselib.options import Options

    return Options(**flags)


def release_tuple(c: Context, **flags: Any) -> tuple[ReleaseConfig, RefResolution]:
    """The release tuple from the task's flags, the environment and invoke's config."""
    from releaselib.options import build_config

    return build_config(options(**flags), release_config(c))


def plugin_registry() -> PluginRegistry:
    """The env plugins, as every task sees them."""
    from releaselib.plugins import PluginRegistry, get_plugin_manager

    return PluginRegistry(get_plugin_manager())


def open_ledger(config: ReleaseConfig, given: str | None) -> Ledger:
    """``--ledger PATH``, else the release's default ledger, created if missing: every step
    records into it, so ``status`` and ``report`` work after any step."""
    from releaselib.config import release_key
    from releaselib.ledger.ledger import Ledger
    from releaselib.ledger.paths import ledger_path

    return Ledger.load(ledger_path(config, given), release_key(config))


def require_ledger(config: ReleaseConfig, given: str | None, *, remedy: str) -> Ledger:
    """The release's ledger; UsageError naming where it was looked for when there is none."""
    from releaselib.ledger.paths import ledger_path

    path = ledger_path(config, given)
    if not path.exists():
        raise UsageError(f"no release ledger at {path}", remedy=remedy)
    return open_ledger(config, given)


def checkout_named(c: Context, repo: str | None) -> bool:
    """Whether a checkout is named (``--repo``, ``OPENENV_RELEASE_REPO``, invoke's config) or
    the current directory is one."""
    from releaselib.options import pick
    from releaselib.stage.discover import is_openenv_checkout

    return pick("repo", repo, release_config(c)) is not None or is_openenv_checkout(Path.cwd())


def ledger_setup(
    c: Context, task: str, given: str | None, *, remedy: str, **flags: Any
) -> tuple[ReleaseConfig, RefResolution, Ledger]:
    """What status and report start from: the release tuple and its ledger. They read only
    the ledger and the Hub, so without a checkout the tuple comes from the flags and the
    ledger (``--ledger``, whose folder is then the staging dir unless one is given, else the
    one ledger under the staging dir), as verify's does."""
    if checkout_named(c, flags.get("repo")):
        config, resolution = release_tuple(c, ledger=given, **flags)
        return config, resolution, require_ledger(config, given, remedy=remedy)
    from releaselib.config import RefResolution
    from releaselib.options import pick
    from releaselib.verify.verify_tuple import verify_config

    if given and pick("staging_dir", flags.get("staging_dir"), release_config(c)) is None:
        flags["staging_dir"] = str(Path(given).expanduser().resolve().parent)  # the ledger's
    config, resolution, found = verify_config(
        options(**flags), release_config(c), ledger=given, task=task
    )
    ledger = require_ledger(config, given or (str(found) if found else None), remedy=remedy)
    recorded = ledger.to_json().get("release", {})
    if recorded.get("ref") and config.ref != recorded["ref"]:  # the ledger at its default path
        reason = f"recorded in {ledger.path}"
        config = config.with_(
            ref=recorded["ref"],
            ref_reason=reason,
            dist=recorded.get("dist") or config.dist,
            sha=recorded.get("sha") or config.sha,
        )
        resolution = RefResolution(config.ref, reason, config.dist, sha=config.sha)
    return config, resolution, ledger


def decision_setup(
    c: Context, as_json: bool, given: str | None, **flags: Any
) -> tuple[ReleaseConfig, Console, Ledger]:
    """What promote, collection, pin and cleanup start from: the release tuple (printed), the
    console, and the ledger whose verdicts they act on."""
    from releaselib import console as out

    config, resolution = release_tuple(c, ledger=given, **flags)
    console = consoles(as_json)
    out.print_tuple(console, config, resolution)
    remedy = "run `verify` first, or pass --ledger PATH"
    return config, console, require_ledger(config, given, remedy=remedy)


def print_json(
    config: ReleaseConfig, key: str, items: Sequence[Any], **more: Sequence[Any]
) -> None:
    """One JSON document on stdout: the release tuple, ``items`` under ``key``, and each of
    ``more`` under its own key."""
    lists = {key: items, **more}
    document = {name: [i.as_json() for i in listed] for name, listed in lists.items()}
    print(json.dumps({"config": config.as_json(), **document}, indent=2))


def visibility(private: bool, public: bool) -> bool | None:
    """``--private``/``--public`` as the release tuple's ``private`` (None: neither given)."""
    if private and public:
        raise UsageError("--private and --public contradict each other", remedy="pass one")
    return False if public else True if private else None
