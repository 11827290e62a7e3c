"""Fix builders shared by the env plugins. Each returns a ``Fix`` whose ``apply`` edits the staged
tree through parsers and returns what it did, or None when the tree already had it."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from releaselib.records import Fix
from releaselib.stage.legacy_core import synthesize_legacy_core

if TYPE_CHECKING:
    from releaselib.edit.dockerfile_model import Dockerfile


def edit_dockerfile(tree: Path, change: Callable[[Dockerfile], Dockerfile]) -> bool:
    """Apply ``change`` to the staged Dockerfile; True when it changed the text."""
    from releaselib.edit.dockerfile_model import Dockerfile  # lazily: only staging edits it

    path = tree / "Dockerfile"
    before = Dockerfile.parse(path.read_text(encoding="utf-8"), "Dockerfile")
    after = change(before)
    if after.text == before.text:
        return False
    path.write_text(after.text, encoding="utf-8")
    return True


def legacy_pythonpath(value: str) -> Fix:
    """Stage ``src/core`` and make the final stage's PYTHONPATH start with ``value``."""

    def apply(tree: Path) -> str:
        synthesize_legacy_core(tree)

        def change(df: Dockerfile) -> Dockerfile:
            current = df.stage_env().get("PYTHONPATH", "")
            if current.split(":")[: len(value.split(":"))] == value.split(":"):
                return df
            return df.set_env("PYTHONPATH", f"{value}:$PYTHONPATH")

        changed = edit_dockerfile(tree, change)
        return f"src/core staged; PYTHONPATH {'set to' if changed else 'already has'} {value}"

    return Fix(
        "legacy-pythonpath",
        "the Dockerfile imports the checked-out repo sources from /app/env/src/core and "
        "/app/env/src, which exist only in a staged build",
        apply,
    )


def literal_from(arg: str) -> Fix:
    """Replace ``FROM ${arg}`` by the ARG's default image (Spaces may pass the ARG empty)."""

    def change(df: Dockerfile) -> Dockerfile:
        for stage in df.stages:
            if f"${{{arg}}}" in stage.base or f"${arg}" == stage.base:
                head = stage.first
                words = ["FROM", *head.flags, df.resolved_base(stage), *head.value[1:]]
                return change(df.replace(head, " ".join(words)))
        return df

    def apply(tree: Path) -> str | None:
        return f"FROM ${{{arg}}} made literal" if edit_dockerfile(tree, change) else None

    return Fix(f"literal-{arg.lower()}", f"Spaces may build with an empty {arg}", apply)


def drop_dirs(env: str, *names: str) -> Fix:
    """Delete the named folders at the stage root and under ``envs/<env>/``."""

    def apply(tree: Path) -> str | None:
        dropped = [
            str(path.relative_to(tree))
            for name in names
            for path in (tree / name, tree / "envs" / env / name)
            if path.is_dir()
        ]
        for rel in dropped:
            shutil.rmtree(tree / rel)
        return f"dropped {', '.join(dropped)}" if dropped else None

    return Fix(
        "drop-" + "-".join(n.strip("/").replace("_", "-") for n in names),
        "these folders trip the Hub's content filters",
        apply,
    )


def tarball_instead_of_clone(repo_url: str, commit: str, dest: str) -> Fix:
    """Replace a build-time ``git clone <repo_url> <dest>`` by a pinned tarball download."""
    tarball = f"{repo_url.removesuffix('.git')}/archive/{commit}.tar.gz"
    download = f"mkdir -p {dest} && curl -fsSL {tarball} | tar -xz --strip-components=1 -C {dest}"

    def replaced(text: str) -> str | None:
        parts = re.split(r"(\s*(?:&&|;)\s*)", text)
        for i, part in enumerate(parts):
            words = shlex.split(part, comments=False) if "git clone" in part else []
            if words[:2] == ["git", "clone"] and repo_url.removesuffix(".git") in part:
                parts[i] = download
                return "".join(parts)
        return None

    def change(df: Dockerfile) -> Dockerfile:
        for instr in df.instructions:
            if instr.cmd == "RUN" and "git clone" in instr.text:
                new = replaced(instr.text)
                if new is not None:
                    return change(df.replace(instr, new))
        return df

    def apply(tree: Path) -> str | None:
        return (
            f"git clone -> pinned tarball {commit[:12]}" if edit_dockerfile(tree, change) else None
        )

    return Fix(
        "pinned-tarball",
        "a build-time git clone makes Space builds slow and unreproducible",
        apply,
    )


def json_form_cmd() -> Fix:
    """Rewrite a shell-form final CMD as ``CMD ["sh", "-c", "<text>"]`` (same command)."""

    def change(df: Dockerfile) -> Dockerfile:
        cmd = df.cmd()
        if cmd is None or cmd.json:
            return df
        return df.replace(cmd.instruction, "CMD " + json.dumps(["sh", "-c", cmd.argv[-1]]))

    def apply(tree: Path) -> str | None:
        return "CMD in JSON form" if edit_dockerfile(tree, change) else None

    return Fix(
        "json-form-cmd",
        "a shell-form CMD runs under /bin/sh -c without exec, so stop signals never reach "
        "the server",
        apply,
    )
