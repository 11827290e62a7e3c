"""A lock written into a staged tree, with what makes every installer of the build honour it.

- the constraints file ``openenv-release.lock.txt`` at the tree's root;
- in each stage built FROM an image that has RUN lines: ``COPY`` of that file to
  ``LOCK_PATH`` and ``ENV PIP_CONSTRAINT=... UV_CONSTRAINT=...`` (pip reads ``PIP_CONSTRAINT``;
  ``uv pip install``/``compile``/``sync`` read ``UV_CONSTRAINT``). An env's own
  ``PIP_CONSTRAINT``/``UV_CONSTRAINT`` ENV keeps its files after ours (both are
  space-separated lists; the resolution honoured its files: ``lock_inputs.own_constraints``);
- ``[tool.uv] constraint-dependencies`` in the pyproject of each project a ``uv sync`` of the
  build installs, since ``uv sync``/``uv lock`` take constraints only from there (uv documents
  no constraint flag or variable for them; only the workspace root's pyproject, not uv.toml),
  merged with the project's own;
- ``!openenv-release.lock.txt`` in a ``.dockerignore`` so the build context keeps the file.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import tomlkit
from tomlkit.items import Table

from releaselib.dockerfile_syntax.words import key_values
from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.errors import StageError
from releaselib.records import Change
from releaselib.stage import git_needs

CONSTRAINTS_FILE = "openenv-release.lock.txt"
LOCK_PATH = "/openenv-release/constraints.txt"
CONSTRAINT_VARS = ("PIP_CONSTRAINT", "UV_CONSTRAINT")
_WHY = "locked dependencies: every install in the build honours the release's resolution"


def lock_tree(stage_dir: Path, df: Dockerfile, pins: str, *, frozen: bool = False) -> list[Change]:
    """Write ``pins`` and the lines that make the build honour them (with ``frozen``, also
    ``UV_FROZEN=1``: a re-locked uv.lock is synced as it is); the changes."""
    (stage_dir / CONSTRAINTS_FILE).write_text(pins, encoding="utf-8")
    changes = [Change(CONSTRAINTS_FILE, None, "", f"{pins.count(chr(10))} pins", _WHY)]
    new, dockerfile_changes = constrained_dockerfile(df, frozen=frozen)
    (stage_dir / "Dockerfile").write_bytes(new.text.encode("utf-8"))
    changes += dockerfile_changes
    for file in uv_projects(df, stage_dir):
        changes += constrain_pyproject(file, stage_dir, pins)
    ignore = stage_dir / ".dockerignore"
    if ignore.is_file():
        text = ignore.read_text(encoding="utf-8")
        sep = "" if not text or text.endswith("\n") else "\n"
        ignore.write_text(f"{text}{sep}!{CONSTRAINTS_FILE}\n", encoding="utf-8")
        changes.append(Change(".dockerignore", None, "", f"!{CONSTRAINTS_FILE}", _WHY))
    return changes


def constrained_dockerfile(
    df: Dockerfile, *, frozen: bool = False
) -> tuple[Dockerfile, list[Change]]:
    """``df`` with the lock copied and named in every image stage that runs commands."""
    changes: list[Change] = []
    ours = {name: LOCK_PATH for name in CONSTRAINT_VARS}
    runs = "\n".join(i.text for i in df.instructions if i.cmd == "RUN")
    if frozen and not re.search(r"--locked\b", runs):  # uv refuses --locked with --frozen
        ours["UV_FROZEN"] = "1"
    index = 0
    while index < len(df.stages):
        stage = df.stage(index)
        instrs = df.stage_instructions(stage)
        index += 1
        if df.parent(stage) is not None or not any(i.cmd == "RUN" for i in instrs):
            continue
        own = {k: v for i in instrs if i.cmd == "ENV" for k, v in key_values(i)}
        env = " ".join(f"{k}={v}" for k, v in ours.items())
        text = f"COPY {CONSTRAINTS_FILE} {LOCK_PATH}\nENV {env}"
        df = df.insert_after(stage.first, text)
        changes.append(Change(df.path, stage.first.end_line + 1, "", text, _WHY))
        for name in CONSTRAINT_VARS:
            if name in own and LOCK_PATH not in own[name].split():
                stage = df.stage(index - 1)
                value = f"{LOCK_PATH} {own[name]}"
                edit = df.env_edit(name, value, stage)
                df = df.apply(edit)
                changes.append(Change(df.path, edit.start, own[name], value, _WHY))
    return df, changes


def shifted(changes: list[Change], lock_changes: list[Change]) -> list[Change]:
    """``changes`` recorded before the lock, their Dockerfile lines moved below the blocks the
    lock inserted (lines of the new text, in order)."""
    blocks = sorted(
        (c.line, c.after.count("\n") + 1)
        for c in lock_changes
        if c.file == "Dockerfile" and c.line is not None and c.after.startswith("COPY ")
    )
    moved = []
    for change in changes:
        line = change.line
        if change.file == "Dockerfile" and line is not None:
            for start, count in blocks:
                line += count if start <= line else 0
        moved.append(replace(change, line=line))
    return moved


def uv_projects(df: Dockerfile, stage_dir: Path) -> list[Path]:
    """The staged pyprojects of the projects the build installs, when a RUN runs a uv project
    command (``uv sync``/``lock``/``run``): only those read ``constraint-dependencies``."""
    runs = "\n".join(i.text for i in df.instructions if i.cmd == "RUN")
    if not re.search(r"\buv\s+(?:\S+\s+)*?(?:sync|lock|run)\b", runs):
        return []
    found = [p for kind, p in git_needs.installed_from(df, stage_dir) if kind == "project"]
    mounted = [  # uv's documented Docker pattern: the project's files bind-mounted, not copied
        f
        for i in df.instructions
        if i.cmd == "RUN"
        for f in i.flags
        if re.search(r"source=(?:\./)?pyproject\.toml\b", f)
    ]
    files = [p / "pyproject.toml" if p.is_dir() else p for p in found]
    files += [stage_dir / "pyproject.toml"] if mounted else []
    return [f for f in dict.fromkeys(files) if f.is_file() and f.suffix == ".toml"]


def constrain_pyproject(file: Path, stage_dir: Path, pins: str) -> list[Change]:
    """Add the pins to ``[tool.uv] constraint-dependencies`` of a staged project's pyproject."""
    rel = file.relative_to(stage_dir).as_posix()
    text = file.read_text(encoding="utf-8")
    try:
        doc = tomlkit.parse(text)
    except Exception as exc:  # tomlkit raises its own ParseError subclasses
        raise StageError(f"{rel}: not valid TOML ({exc})", remedy="fix the file") from exc
    if "project" not in doc:
        return []
    tool = doc.setdefault("tool", tomlkit.table())
    uv_table = tool.setdefault("uv", tomlkit.table()) if isinstance(tool, Table | dict) else None
    if not isinstance(uv_table, Table | dict):
        raise StageError(f"{rel}: [tool.uv] is not a table", remedy="fix the file")
    existing = uv_table.get("constraint-dependencies", [])
    existing = existing if isinstance(existing, list) else []
    wanted = [*(str(x) for x in existing), *pins.splitlines()]
    merged = tomlkit.array()
    merged.extend(dict.fromkeys(wanted))
    merged.multiline(True)
    uv_table["constraint-dependencies"] = merged
    file.unlink()  # a new file: one under src/ is a link the staged trees share
    file.write_text(tomlkit.dumps(doc), encoding="utf-8")
    return [Change(rel, None, "", f"[tool.uv] constraint-dependencies ({len(merged)})", _WHY)]
