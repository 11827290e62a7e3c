"""The release's rewrites of a staged tree: pyprojects, requirements files, Dockerfile, README."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

from releaselib import env_facts
from releaselib.config import ReleaseConfig
from releaselib.edit import (
    pyproject_deps,
    readme,
    requirements_txt,
    unrewritable_manifests,
)
from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.errors import StageError
from releaselib.records import Change, EnvSpec
from releaselib.stage import git_needs
from releaselib.stage.legacy_core import copies_legacy_core, synthesize_legacy_core
from releaselib.stage.staged_dockerfile import rewrite_for_space


def read_text(path: Path, stage_dir: Path) -> str:
    """A staged text file's content; a non-UTF-8 file is a StageError naming it."""
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        rel = path.relative_to(stage_dir)
        raise StageError(
            f"{rel}: not UTF-8 (byte {exc.start})", remedy="save the file as UTF-8 in the checkout"
        ) from exc


def rewrite_file(
    path: Path, stage_dir: Path, rewrite: Callable[[str, str], tuple[str, Sequence[Change]]]
) -> list[Change]:
    """Apply ``rewrite(text, relpath)`` to one staged file, writing it back only if it changed."""
    rel = path.relative_to(stage_dir).as_posix()
    text = read_text(path, stage_dir)
    new, changes = rewrite(text, rel)
    if new != text:
        path.write_bytes(new.encode("utf-8"))
    return list(changes)


@functools.lru_cache(maxsize=64)
def pinned_pyproject(text: str, path: str, dist: str, ref: str) -> tuple[str, tuple[Change, ...]]:
    """``rewrite_pyproject``, memoised: the env's pyproject is staged twice and tomlkit is slow."""
    new, changes = pyproject_deps.rewrite_pyproject(text, path=path, dist=dist, ref=ref)
    return new, tuple(changes)


def rewrite_staged(config: ReleaseConfig, spec: EnvSpec, stage_dir: Path) -> list[Change]:
    """The release's rewrites of pyprojects, requirements, Dockerfile and README.

    Pinned: the root and env pyprojects, every ``requirements*.txt`` outside ``src/``, and every
    requirements file or pyproject the Dockerfile installs from (``-r``/``-c`` followed). The
    Dockerfile is rewritten last, with the tree as its context, so git goes into every stage
    that installs a git+ requirement.
    """
    changes: list[Change] = []
    if not config.sha:
        raise StageError(
            f"envs/{spec.name}: the release tuple has no OpenEnv commit to pin",
            remedy="stage through build_config (it resolves the ref to its sha), or pass --ref SHA",
        )
    pin = {"dist": config.dist, "ref": config.sha}
    assert spec.dockerfile is not None
    source_rel = spec.dockerfile.relative_to(spec.path).as_posix()
    text = read_text(stage_dir / source_rel, stage_dir)
    original = Dockerfile.parse(text, f"envs/{spec.name}/{source_rel}")  # errors name the file
    for name in ("setup.py", "setup.cfg"):  # Python code staging does not edit
        setup = stage_dir / name
        named = (
            unrewritable_manifests.setup_requirement(name, read_text(setup, stage_dir))
            if setup.is_file()
            else None
        )
        if named:
            raise StageError(
                f"envs/{spec.name}/{name}: install_requires names {named!r}, which staging "
                "cannot pin to the release",
                remedy="move the OpenEnv requirement to pyproject.toml or requirements.txt",
            )
    # no comment-keeping YAML editor: refuse
    for env_file in git_needs.conda_environments(stage_dir):
        rel = env_file.relative_to(stage_dir).as_posix()
        unrewritable_manifests.check_conda_environment(
            read_text(env_file, stage_dir), path=rel, **pin
        )
    files = staged_requirement_files(original, spec, stage_dir)
    constraints = git_needs.constraint_only(original, stage_dir, files)
    for file in files:
        if file.suffix == ".toml":
            changes += rewrite_file(file, stage_dir, lambda t, p: pinned_pyproject(t, p, **pin))
        else:
            only_c = file in constraints
            changes += rewrite_file(
                file,
                stage_dir,
                lambda t, p, c=only_c: requirements_txt.rewrite_requirements_txt(  # type: ignore[misc]
                    t, path=p, constraints=c, dist=config.dist, ref=config.sha
                ),
            )
    new, dockerfile_changes = rewrite_for_space(  # change lines are lines of the staged file
        text, path="Dockerfile", base_image=config.base_image, context=stage_dir, **pin
    )
    (stage_dir / "Dockerfile").write_bytes(new.encode("utf-8"))
    changes += dockerfile_changes
    if copies_legacy_core(Dockerfile.parse(new, "Dockerfile")):
        synthesize_legacy_core(stage_dir)
    changes += stage_readme(config, spec, stage_dir)
    return changes


def staged_requirement_files(df: Dockerfile, spec: EnvSpec, stage_dir: Path) -> list[Path]:
    """The staged files whose OpenEnv requirements are pinned, each once, in a stable order."""
    pyprojects = [stage_dir / "pyproject.toml", stage_dir / "envs" / spec.name / "pyproject.toml"]
    named = [
        p
        for p in sorted(stage_dir.rglob("requirements*.txt"))
        if p.relative_to(stage_dir).parts[0] != "src"
    ]
    files = [
        *pyprojects,
        *(f for n in named for f in git_needs.with_includes(n)),
        *git_needs.installed_files(df, stage_dir),
    ]
    return [
        f
        for f in dict.fromkeys(files)
        if f.is_file() and f.resolve().is_relative_to(stage_dir.resolve())
    ]


def stage_readme(config: ReleaseConfig, spec: EnvSpec, stage_dir: Path) -> list[Change]:
    """The Space card, with the port and client class read from the staged copy of the env
    (what git tracks), never from the checkout."""
    staged_env = stage_dir / "envs" / spec.name
    readme_path = stage_dir / "README.md"
    source = read_text(readme_path, stage_dir) if readme_path.is_file() else None
    text, changes = readme.build_space_readme(
        source,
        path="README.md",
        env=spec.name,
        space_id=config.space_id(spec.name),
        version=config.version,
        ref=config.pin_label,
        hub_tag=config.hub_tag,
        app_port=env_facts.read_app_port(staged_env, f"envs/{spec.name}"),
        client_class=env_facts.find_client_class(staged_env),
    )
    readme_path.write_bytes(text.encode("utf-8"))
    return changes
