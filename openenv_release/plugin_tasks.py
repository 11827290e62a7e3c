"""The ``plugin`` task namespace: scaffold a built-in env plugin."""

from __future__ import annotations

from pathlib import Path

from invoke.collection import Collection
from invoke.context import Context
from invoke.exceptions import Exit

from openenv_release.flags import release_task
from releaselib.errors import ReleaseError


@release_task(
    help={
        "env": "the env's directory name under envs/ (also the module name)",
        "root": "the openenv-release project root (default: the current directory)",
    }
)
def new(c: Context, env: str, root: str = ".") -> None:
    """Write env_plugins/ENV.py (the shape every built-in plugin has) and register it."""
    from releaselib.scaffold import new_plugin

    try:
        written = new_plugin(Path(root), env)
    except ReleaseError as exc:
        raise Exit(f"error: {exc.one_line()}", code=exc.exit_code) from None
    for path in written:
        print(f"wrote {path}")
    print(
        f"next: add its fixes and probes to env_plugins/{env}.py (docs/adding-a-plugin.md), "
        "then pytest tests/env_plugins"
    )


plugin = Collection("plugin", new)
