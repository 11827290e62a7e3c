"""The built-in static checks of a staged Space tree, as a plugin.

A staged tree has ``Dockerfile`` and ``README.md`` at its root, the env's files at the root,
``envs/<env>/`` and ``src/``; it is the Docker build context. Every finding names the file and
line and says what to do. Checks that read the Dockerfile find nothing when it is missing or
unparseable; ``dockerfile-parses`` reports that once.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from releaselib.config import check_image
from releaselib.dockerfile_syntax.parse import Copy, Stage
from releaselib.dockerfile_syntax.words import build_variables
from releaselib.edit import git_packages
from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.errors import StageError, UsageError
from releaselib.hookspecs import hookimpl
from releaselib.records import Check, Finding
from releaselib.stage import git_needs

DOCKERFILE = "Dockerfile"
README = "README.md"
#: How a Git LFS pointer file starts (the spec caps a pointer at 1024 bytes).
LFS_POINTER = b"version https://git-lfs.github.com/spec/v1\n"


@hookimpl
def openenv_release_checks() -> tuple[Check, ...]:
    return (
        Check("dockerfile-parses", "the staged Dockerfile exists and parses", check_parses),
        Check(
            "stdlib-shadowing",
            "no PYTHONPATH directory holds a module named like a stdlib module",
            check_stdlib_shadowing,
        ),
        Check("git-for-git-deps", "git is installed before git+ installs", check_git),
        Check(
            "openenv-pinned",
            "every OpenEnv requirement the build reads is pinned to one OpenEnv git ref",
            check_openenv_pinned,
        ),
        Check("copy-source-missing", "every COPY source exists in the tree", check_copies),
        Check("cmd-json-form", "the final CMD is in JSON form", check_cmd_form),
        Check(
            "from-unresolved",
            "every FROM is a literal, valid image reference",
            check_from,
        ),
        Check("readme-metadata", "the README metadata is what the Hub accepts", check_readme),
        Check("lfs-pointer", "no staged file is a Git LFS pointer", check_lfs_pointers),
    )


# -- the checks ---------------------------------------------------------------------------------


def check_parses(stage_dir: Path) -> Iterator[Finding]:
    path = stage_dir / DOCKERFILE
    if not path.is_file():
        yield Finding("dockerfile-parses", DOCKERFILE, None, "no Dockerfile", "stage the env again")
        return
    try:
        Dockerfile.parse(path.read_text(encoding="utf-8"), DOCKERFILE)
    except StageError as exc:
        yield Finding("dockerfile-parses", DOCKERFILE, None, exc.message, exc.remedy or "")


def check_stdlib_shadowing(stage_dir: Path) -> Iterator[Finding]:
    df = _parsed(stage_dir)
    if df is None:
        return
    line = _python_path_line(df)
    for entry in df.stage_env().get("PYTHONPATH", "").split(":"):
        directory = entry or df.workdir() or "/"  # an empty entry means the working directory
        found = git_needs.in_tree(df, df.final_stage, directory, stage_dir)
        if found is None or not found.is_dir():
            continue
        for module, name in _top_level_modules(found):
            if name in sys.stdlib_module_names:
                shown = module.relative_to(stage_dir).as_posix()
                yield Finding(
                    "stdlib-shadowing",
                    DOCKERFILE,
                    line,
                    f"PYTHONPATH entry {directory} holds {shown}, which shadows the stdlib "
                    f"module {name}",
                    f"rename {shown}, or take {directory} off PYTHONPATH (put its parent there "
                    "and import it as a package)",
                )


def check_git(stage_dir: Path) -> Iterator[Finding]:
    """Each stage that installs a git+ requirement (directly, through ``-r``/``-c`` files or a
    pyproject) has git before it; staging installs it, so a finding is a staging bug."""
    df = _parsed(stage_dir)
    if df is None:
        return
    for stage, instr, need in git_needs.missing_git(df, stage_dir):
        image = git_packages.root_image(df, stage)
        known = git_packages.image_family(image) is not None
        yield Finding(
            "git-for-git-deps",
            DOCKERFILE,
            instr.start_line,
            f"stage {stage.name or stage.index} installs {need} but has no git"
            + ("" if known else f" (staging cannot tell the package manager of {image})"),
            "install git in your Dockerfile before that RUN"
            if not known
            else f"install git earlier in the stage: {git_packages.APT_GIT}",
        )


def check_openenv_pinned(stage_dir: Path) -> Iterator[Finding]:
    """Every OpenEnv requirement in a file the build reads (Dockerfile RUN, ARG and ENV text,
    requirements files, pyprojects and their uv sources, conda environments) is a git URL to
    the OpenEnv repository at a fixed ref, the same ref everywhere: staging pins them all, so
    a finding is a spec staging left for PyPI to resolve."""
    from releaselib.edit import (
        pyproject_deps,
        requirement,
        requirements_txt,
        run_pins,
        unrewritable_manifests,
    )  # lazily: tomlkit and packaging load slowly

    df = _parsed(stage_dir)
    if df is None:
        return
    found: list[tuple[str, int | None, str, str | None]] = []  # file, line, spec, ref
    runs = "\n".join(i.text for i in df.instructions if i.cmd == "RUN")
    for instr in df.instructions:
        specs = run_pins.shell_specs(instr.text) if instr.cmd == "RUN" else []
        for name, value in build_variables(instr):
            if re.search(rf"\$\{{?{re.escape(name)}\b", runs):
                specs += [w for w in value.split() if requirement.names_openenv(w)]
        found += [(DOCKERFILE, instr.start_line, s, requirement.pinned_ref(s)) for s in specs]
    for file in git_needs.build_files(df, stage_dir):
        rel = file.relative_to(stage_dir).as_posix()
        try:
            text = file.read_text(encoding="utf-8")
            if file.suffix == ".toml":
                specs = pyproject_deps.find_openenv_requirements(text, path=rel)
                found += [
                    (rel, pyproject_deps.line_of(text, s, 1), s, requirement.pinned_ref(s))
                    for s in specs
                ]
                found += [(rel, n, e, ref) for n, e, ref in pyproject_deps.source_specs(text, rel)]
            else:
                found += [
                    (rel, n, s, requirement.pinned_ref(s))
                    for n, s in requirements_txt.requirements_specs(text)
                ]
        except (OSError, UnicodeDecodeError, StageError):
            continue  # staging reports files it cannot read or parse
    for file in git_needs.conda_environments(stage_dir):
        rel = file.relative_to(stage_dir).as_posix()
        try:
            specs = unrewritable_manifests.conda_specs(file.read_text(encoding="utf-8"), rel)
        except (OSError, UnicodeDecodeError, StageError):
            continue
        found += [(rel, None, s, requirement.pinned_ref(s)) for s in specs]
    refs = Counter(ref for *_, ref in found if ref is not None)
    main = refs.most_common(1)[0][0] if refs else None
    for where, line, spec, ref in found:
        if ref is None or ref != main:
            at = f"pinned to {ref}, not {main} like the others" if ref else "not pinned to a ref"
            yield Finding(
                "openenv-pinned",
                where,
                line,
                f"OpenEnv requirement {spec!r} is {at}",
                "stage the env again; if it stays, report the form staging left unpinned",
            )


def check_copies(stage_dir: Path) -> Iterator[Finding]:
    df = _parsed(stage_dir)
    if df is None:
        return
    for stage in df.stages:
        for copy in df.copies(stage):
            for source in _context_sources(copy):
                if not _exists(stage_dir, source):
                    yield Finding(
                        "copy-source-missing",
                        DOCKERFILE,
                        copy.instruction.start_line,
                        f"{copy.instruction.cmd} source {source} is not in the staged tree",
                        "add the file to the env (or a plugin fix that stages it), "
                        "or drop it from the COPY",
                    )


def check_lfs_pointers(stage_dir: Path) -> Iterator[Finding]:
    """A file that is still its LFS pointer (``git lfs pull`` never ran) would be staged as the
    pointer's three lines instead of the content the build or the env reads. An env's file is
    staged twice (at the root and under ``envs/<env>/``): each pointer is named once, by its
    checkout path."""
    found = sorted(
        (
            rel
            for rel, size in _regular_files(stage_dir)
            if size <= 1024 and (stage_dir / rel).read_bytes().startswith(LFS_POINTER)
        ),
        key=lambda rel: rel.split("/"),  # the order of the paths' parts
    )
    copies = {
        rel.split("/", 2)[2] for rel in found if rel.startswith("envs/") and rel.count("/") > 1
    }
    for rel in found:
        if rel not in copies:
            yield Finding(
                "lfs-pointer",
                rel,
                1,
                "is a Git LFS pointer, not the file it points to",
                "run `git lfs pull` in the checkout (install git-lfs first), then stage again",
            )


def _regular_files(tree: Path, under: str = "") -> Iterator[tuple[str, int]]:
    """(posix path in ``tree``, size) of each regular file below ``tree/under``: one scandir
    per folder, symlinks neither listed nor followed, unreadable folders skipped (as rglob)."""
    try:
        entries = list(os.scandir(tree / under))
    except PermissionError:
        return
    for entry in entries:
        rel = f"{under}{entry.name}"
        if entry.is_file(follow_symlinks=False):
            yield rel, entry.stat(follow_symlinks=False).st_size
        elif entry.is_dir(follow_symlinks=False):
            yield from _regular_files(tree, f"{rel}/")


def check_cmd_form(stage_dir: Path) -> Iterator[Finding]:
    df = _parsed(stage_dir)
    cmd = df.cmd() if df is not None else None
    if cmd is not None and not cmd.json:
        yield Finding(
            "cmd-json-form",
            DOCKERFILE,
            cmd.instruction.start_line,
            "the final CMD is in shell form, so signals never reach the server",
            f"write it as CMD {json.dumps(['sh', '-c', cmd.argv[-1]])}",
        )


def check_from(stage_dir: Path) -> Iterator[Finding]:
    """Every FROM is a literal, valid image reference (or an earlier stage, or scratch)."""
    df = _parsed(stage_dir)
    if df is None:
        return
    for stage in df.stages:
        if "$" in stage.base:
            yield Finding(
                "from-unresolved",
                DOCKERFILE,
                stage.first.start_line,
                f"FROM {stage.base} holds a variable, and Spaces override build-args "
                "(BASE_IMAGE arrives empty)",
                "write the literal image, or add a plugin fix for this env's base image",
            )
        elif not _names_stage(df, stage) and stage.base.lower() != "scratch":
            try:
                check_image(stage.base, "FROM")
            except UsageError as exc:
                yield Finding(
                    "from-unresolved",
                    DOCKERFILE,
                    stage.first.start_line,
                    exc.message,
                    "write a valid image reference (name[:tag][@digest]) in the env's Dockerfile",
                )


def _names_stage(df: Dockerfile, stage: Stage) -> bool:
    """True if the stage is built FROM an earlier stage of the file."""
    return df.parent(stage) is not None


def check_readme(stage_dir: Path) -> Iterator[Finding]:
    path = stage_dir / README
    if not path.is_file():
        yield Finding("readme-metadata", README, None, "no README.md", "stage the env again")
        return
    from releaselib.edit.front_matter import metadata_problems  # lazily: it loads huggingface_hub

    for line, problem in metadata_problems(path.read_text(encoding="utf-8")):
        yield Finding(
            "readme-metadata", README, line, problem, "fix the README front matter in the env"
        )


# -- Dockerfile helpers -------------------------------------------------------------------------


def _parsed(stage_dir: Path) -> Dockerfile | None:
    try:
        return Dockerfile.parse((stage_dir / DOCKERFILE).read_text(encoding="utf-8"), DOCKERFILE)
    except (OSError, UnicodeDecodeError, StageError):
        return None


def _python_path_line(df: Dockerfile) -> int:
    """The line of the last ENV setting PYTHONPATH for the final stage (else its FROM)."""
    stage: Stage | None = df.final_stage
    while stage is not None:
        setting = [
            i
            for i in df.stage_instructions(stage)
            if i.cmd == "ENV" and "PYTHONPATH" in i.value[::2]
        ]
        if setting:
            return setting[-1].start_line
        stage = df.parent(stage)
    return df.final_stage.first.start_line


def _top_level_modules(directory: Path) -> Iterator[tuple[Path, str]]:
    """(path, module name) for each module or regular package directly in ``directory``."""
    for child in sorted(directory.iterdir()):
        if child.is_file() and child.suffix == ".py":
            yield child, child.stem
        elif child.is_dir() and (child / "__init__.py").is_file():
            yield child, child.name


def _context_sources(copy: Copy) -> list[str]:
    """Sources read from the build context: not --from, heredocs, URLs or variables."""
    if copy.from_ is not None:
        return []
    return [
        s
        for s in copy.sources
        if not s.startswith("<<") and "://" not in s and not s.startswith("git@") and "$" not in s
    ]


def _exists(root: Path, source: str) -> bool:
    relative = source.lstrip("/") or "."
    if re.search(r"[*?\[]", relative):
        return any(root.glob(relative))
    return (root / relative).exists()
