"""The ``plugin`` task namespace: scaffold a built-in env plugin."""

from __future__ import annotations

from pathlib import Path

from invoke.collection import Collection
from invoke.context import Context

from openenv_release.common import release_config, reported
from openenv_release.flags import FLAG_HELP, release_task
from releaselib.errors import UsageError


@release_task(
    positional=[],  # a flag, so that -h after the task is help, as in every task
    help={
        "env": "the env's directory name under envs/ of the checkout (also the module name)",
        "repo": FLAG_HELP["repo"] + "; the env must be one of its envs/",
        "root": "the openenv-release project root (default: the current directory)",
    }
)
def new(c: Context, env: str | None = None, repo: str | None = None, root: str = ".") -> None:
    """Write and register env_plugins/ENV.py for an env of the checkout.

    The module has the shape every built-in plugin has.
    """
    from releaselib.options import find_repo, pick, repo_source
    from releaselib.scaffold import new_plugin

    with reported():
        if not env:
            raise UsageError("plugin.new needs --env NAME", remedy="e.g. plugin.new --env my_env")
        configured = release_config(c)
        checkout = find_repo(pick("repo", repo, configured), repo_source(repo, configured))
        written = new_plugin(Path(root), env, checkout)
    for path in written:
        print(f"wrote {path}")
    print(
        f"next: add its fixes and probes to env_plugins/{env}.py (docs/adding-a-plugin.md), "
        f"then python -m pytest -v tests/env_plugins -k {env}"
    )


plugin = Collection("plugin", new)
