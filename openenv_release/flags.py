"""The flags every task shares, declared once: their help, and one short-flag scheme.

``-h`` is help in every task. A flag has the same short form in every task that has it, or
none: ``SHORT`` is the whole scheme, and invoke's automatic short flags (first free letter of
each name, so ``-h`` for ``--hub-endpoint``) are off.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from invoke.tasks import Task, task

#: release's steps, spelt out so that --help need not import releaselib.release (a test checks)
RELEASE_STEPS = "stage, deploy, verify, promote, collection, pin, report"
FLAG_HELP = {
    "repo": "OpenEnv checkout (default: OPENENV_RELEASE_REPO, else the current directory if it "
    "is one)",
    "env": "env to work on (repeatable; default: every env folder, one that cannot deploy "
    "named with its reason)",
    "all": "every env folder (the default when no --env is given)",
    "version": "release version (default: the checkout's pyproject version)",
    "namespace": "Hub namespace of the Spaces (default: openenv)",
    "suffix": "Space suffix (default: -<version>)",
    "base_image": "base image repository (default: ghcr.io/huggingface/openenv-base)",
    "base_sha": "base image tag/sha instead of latest",
    "ref": "OpenEnv git ref to pin to (sha, branch or tag) when it differs from the version; it "
    "is resolved to its commit sha once per release (a full sha is needed when the remote "
    "cannot be read)",
    "dist": "the distribution the pinned commit publishes (openenv or openenv-core), when it "
    "cannot be read at that commit (default: read from its pyproject.toml)",
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
    "no_lock": "stage without locking dependencies: every build then resolves them afresh (the "
    "board and the briefing say so)",
    "force": "restore a canonical whose head moved since the promotion too: still only the "
    "files and variables the promotion wrote and nobody changed since (default: hold it)",
    "allow_downgrade": "let promote replace a canonical whose card says it holds a newer "
    "release than this one (default: hold it)",
    "spaces": "how many Spaces build or start at once in the rehearsal's embedded Hub; the "
    "others wait, queued, until one answers or stops, and each Space is paused once its verdict "
    "is in (default: one per core, at least 2; in flight in all: twice that, and no more than "
    "available memory / 400 MB where the system reports it)",
    "keep": "the rehearsal's folder (checkout, staging, ledger, briefing; default: a new temp dir)",
}

#: The help of the steps that act on the ledger's verdicts (promote, collection, pin, cleanup).
DECIDE_HELP = {
    **FLAG_HELP,
    "env": "env to decide for (repeatable; default: every env with a verdict)",
    "staging_dir": "where the release's ledger lives unless --ledger (default: ./hf-staging)",
    "ledger": "the release ledger holding the verdicts (default: the release's ledger)",
}


def helps(*names: str, table: Mapping[str, str] = FLAG_HELP, **more: str) -> dict[str, str]:
    """Invoke ``help=`` for the flags ``names`` (from ``table``), plus ``more``."""
    return {**{name: table[name] for name in names}, **more}


#: The short forms, one letter per flag across every task (``-h`` stays help).
SHORT = {
    "env": "e",
    "repo": "r",
    "version": "v",
    "namespace": "n",
    "json": "j",
    "dry_run": "d",
    "yes": "y",
}


class ReleaseTask(Task[Any]):
    """An invoke Task whose short flags come from ``SHORT`` only."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "auto_shortflags": False})

    def arg_opts(self, name: str, default: str, taken_names: set[str]) -> dict[str, Any]:
        opts: dict[str, Any] = super().arg_opts(name, default, taken_names)
        short = SHORT.get(name.rstrip("_"))
        if short is not None and short not in taken_names:
            opts["names"] = [*opts["names"], short]
        return opts


def release_task(**options: Any) -> Callable[[Callable[..., Any]], ReleaseTask]:
    """``@task`` for the release tool's tasks (``ReleaseTask``: the one short-flag scheme)."""
    made: Callable[[Callable[..., Any]], ReleaseTask] = task(klass=ReleaseTask, **options)
    return made
