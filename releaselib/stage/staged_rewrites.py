"""The release's rewrites of a staged tree: pyprojects, requirements files, Dockerfile, README."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from releaselib import env_facts
from releaselib.config import ReleaseConfig
from releaselib.dockerfile_syntax.parse import Instruction, Stage
from releaselib.edit import (
    git_packages,
    pipfile,
    pyproject_deps,
    readme,
    requirements_txt,
    unpinnable_installs,
    unrewritable_manifests,
)
from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.edit.install_sources import command_installs
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
    """Apply ``rewrite(text, relpath)`` to one staged file, writing it back only if it changed,
    as a new file (one under ``src/`` is a link staged trees share)."""
    rel = path.relative_to(stage_dir).as_posix()
    text = read_text(path, stage_dir)
    new, changes = rewrite(text, rel)
    if new != text:
        path.unlink()
        path.write_bytes(new.encode("utf-8"))
    return list(changes)


#: (text, dist, ref) -> pinned text and Changes, the last PINNED_MEMO rewrites (oldest dropped).
_pinned: dict[tuple[str, str, str], tuple[str, tuple[Change, ...]]] = {}
PINNED_MEMO = 64


def pinned_pyproject(text: str, path: str, dist: str, ref: str) -> tuple[str, tuple[Change, ...]]:
    """``rewrite_pyproject``, memoised by content: the env's pyproject is staged at two paths
    (``envs/<env>/`` and the root) and tomlkit is slow. The Changes name ``path``; an error is
    never memoised, so it names the path being staged."""
    key = (text, dist, ref)
    if key not in _pinned:
        new, changes = pyproject_deps.rewrite_pyproject(text, path=path, dist=dist, ref=ref)
        while len(_pinned) >= PINNED_MEMO:
            del _pinned[next(iter(_pinned))]
        _pinned[key] = new, tuple(changes)
    new, done = _pinned[key]
    return new, tuple(replace(change, file=path) for change in done)


def rewrite_staged(config: ReleaseConfig, spec: EnvSpec, stage_dir: Path) -> list[Change]:
    """The release's rewrites of pyprojects, requirements, Dockerfile and README.

    Pinned: every pyproject and ``requirements*.txt`` outside ``src/``, and every
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
    check_installs(original, spec, stage_dir)
    changes += pin_pipfiles(stage_dir, spec, **pin)
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
    for file in (f for f in files if f.suffix == ".toml"):
        unrewritable_manifests.check_pyproject(
            read_text(file, stage_dir),
            path=checkout_path(spec, file.relative_to(stage_dir).as_posix()),
            **pin,
        )
    check_hash_modes(original, spec, stage_dir, changes)
    new, dockerfile_changes = rewrite_for_space(  # change lines are lines of the staged file
        text, path="Dockerfile", base_image=config.base_image, context=stage_dir, **pin
    )
    (stage_dir / "Dockerfile").write_bytes(new.encode("utf-8"))
    changes += dockerfile_changes
    if copies_legacy_core(Dockerfile.parse(new, "Dockerfile")):
        synthesize_legacy_core(stage_dir)
    changes += stage_readme(config, spec, stage_dir)
    return changes


def check_installs(df: Dockerfile, spec: EnvSpec, stage_dir: Path) -> None:
    """StageError for the first install of ``df`` (a RUN, or a ``-r``/``-c`` of a requirements
    file it reads) whose OpenEnv staging cannot pin (``unpinnable_installs``)."""
    unpinnable_installs.check_installs(
        df, lambda stage, _, path: git_needs.in_tree(df, stage, path, stage_dir) is not None
    )
    for read in git_needs.installed_files(df, stage_dir):
        if read.suffix == ".toml":
            continue
        folder = read.parent

        def exists(include: str, folder: Path = folder) -> bool:
            return _staged_file(folder / include, stage_dir)

        unpinnable_installs.check_includes(
            read_text(read, stage_dir),
            path=checkout_path(spec, read.relative_to(stage_dir).as_posix()),
            exists=exists,
        )


def check_hash_modes(df: Dockerfile, spec: EnvSpec, stage_dir: Path, changes: list[Change]) -> None:
    """StageError when a command installs requirements files (``-r a.txt -r b.txt``, and what
    they include) of which one now holds the release's git URL while pip is in hash-checking
    mode (another file's ``--hash``, ``--require-hashes``
    in a file, on the command line or as ``PIP_REQUIRE_HASHES``): pip cannot hash a git URL."""
    pinned: dict[str, Change] = {}
    for change in changes:
        if change.after:  # a dropped constraint is no git URL
            pinned.setdefault(change.file, change)
    for stage in df.stages:
        for instr in df.stage_instructions(stage):
            if instr.cmd != "RUN":
                continue
            for command in command_installs(df, stage, instr):
                files = [
                    git_needs.in_tree(df, stage, path, stage_dir)
                    for kind, path in command
                    if kind == "requirements"
                ]
                read = [
                    f
                    for file in files
                    if file is not None
                    for f in git_needs.with_includes(file)
                    if f.suffix != ".toml"
                ]
                read = list(dict.fromkeys(read))
                rels = [f.relative_to(stage_dir).as_posix() for f in read]
                pin = next((pinned[r] for r in rels if r in pinned), None)
                if pin is None:
                    continue
                mode = _hash_mode(df, stage, instr, read, rels, stage_dir, spec)
                if mode is not None:
                    raise StageError(
                        f"{checkout_path(spec, pin.file)}:{pin.line}: pins {pin.before!r} to the "
                        f"release's git URL, which pip cannot hash-check, and {mode} puts pip in "
                        "hash-checking mode",
                        remedy="install OpenEnv in a pip install of its own, or generate the "
                        "requirements without hashes",
                    )


#: What pip reads as true in an environment variable.
_TRUE = frozenset({"1", "true", "yes", "on"})


def _hash_mode(
    df: Dockerfile,
    stage: Stage,
    instr: Instruction,
    read: list[Path],
    rels: list[str],
    stage_dir: Path,
    spec: EnvSpec,
) -> str | None:
    """What puts the pip of ``instr`` that reads ``read`` in hash-checking mode, if anything."""
    if "--require-hashes" in git_packages.shell_text(instr):
        return f"{df.path}:{instr.start_line}'s --require-hashes"
    if df.scope_at(stage, instr).get("PIP_REQUIRE_HASHES", "").lower() in _TRUE:
        return f"{df.path}:{instr.start_line}'s PIP_REQUIRE_HASHES"
    for path, rel in zip(read, rels, strict=True):
        line = requirements_txt.hash_mode_line(read_text(path, stage_dir))
        if line is not None:
            return f"{checkout_path(spec, rel)}:{line}, installed with it,"
    return None


def pin_pipfiles(stage_dir: Path, spec: EnvSpec, *, dist: str, ref: str) -> list[Change]:
    """Pin OpenEnv in every ``Pipfile`` outside ``src/``; a ``Pipfile.lock`` that locks another
    OpenEnv, or sits beside a Pipfile staging rewrote (its hash no longer matches, so
    ``pipenv install --deploy`` refuses it), is a StageError naming it (staging cannot lock
    again)."""
    changes: list[Change] = []
    rewritten: set[Path] = set()
    for file in _outside_src(stage_dir, "Pipfile"):
        pinned = rewrite_file(
            file, stage_dir, lambda t, p: pipfile.rewrite_pipfile(t, path=p, dist=dist, ref=ref)
        )
        rewritten |= {file.parent} if pinned else set()
        changes += pinned
    for lock in _outside_src(stage_dir, "Pipfile.lock"):
        rel = checkout_path(spec, lock.relative_to(stage_dir).as_posix())
        pipfile.check_pipfile_lock(read_text(lock, stage_dir), path=rel, ref=ref)
        if lock.parent in rewritten:
            raise StageError(
                f"{rel}: locks the Pipfile beside it, which staging rewrote (OpenEnv pinned to "
                "the release), so pipenv would refuse the stale lock (--deploy) or install it",
                remedy=f"delete {rel} (pipenv then locks the pinned Pipfile in the build)",
            )
    return changes


def checkout_path(spec: EnvSpec, rel: str) -> str:
    """Where a staged file comes from in the checkout: the env's files are staged twice, at
    the root and under ``envs/<env>/``; errors name the checkout's file."""
    return rel if rel.split("/", 1)[0] in ("envs", "src") else f"envs/{spec.name}/{rel}"


def _staged_file(path: Path, stage_dir: Path) -> bool:
    resolved = path.resolve()
    return resolved.is_relative_to(stage_dir.resolve()) and resolved.is_file()


def _outside_src(stage_dir: Path, name: str) -> list[Path]:
    return [p for p in git_needs.outside_src(stage_dir, name) if p.is_file()]


def staged_requirement_files(df: Dockerfile, spec: EnvSpec, stage_dir: Path) -> list[Path]:
    """The staged files whose OpenEnv requirements are pinned (or, in a constraints file,
    dropped), each once, in a stable order."""
    pyprojects = [
        stage_dir / "pyproject.toml",
        stage_dir / "envs" / spec.name / "pyproject.toml",
        *_outside_src(stage_dir, "pyproject.toml"),  # any installer may read one
    ]
    named = git_needs.outside_src(stage_dir, "requirements*.txt")
    files = [
        *pyprojects,
        *(f for n in named for f in git_needs.with_includes(n)),
        *git_needs.installed_files(df, stage_dir),
        *git_needs.env_constraint_files(df, stage_dir),
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
