"""The staged Dockerfile: ``edit``'s rewrite, with git needs read from the staged tree."""

from __future__ import annotations

import functools
from pathlib import Path

from releaselib.edit.dockerfile_rewrite import rewrite_dockerfile
from releaselib.records import Change
from releaselib.stage.git_needs import missing_git


def rewrite_for_space(
    text: str, *, path: str, base_image: str, dist: str, ref: str, context: Path | None = None
) -> tuple[str, list[Change]]:
    """``rewrite_dockerfile``; with the build ``context`` (the staged tree, its requirements and
    pyprojects already pinned), every stage that installs a git+ requirement and lacks git
    installs it first."""
    needs = functools.partial(missing_git, root=context) if context is not None else None
    return rewrite_dockerfile(
        text, path=path, base_image=base_image, dist=dist, ref=ref, git_needs=needs
    )
