"""docs/adding-a-plugin.md, executed: every console command and code block, in order, on a copy
of this project, each shown output line checked. The walk-through ends with a PASS on the
embedded Hub, so the doc cannot drift from what the tool does."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from releaselib import records

PROJECT = Path(__file__).resolve().parents[1]
DOC = PROJECT / "docs" / "adding-a-plugin.md"
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
EXITS = re.compile(r"\s+# exits (\d+)$")
WAIT = float(os.environ.get("OPENENV_RELEASE_TEST_WAIT_FACTOR", "1"))


@dataclass
class Command:
    line: str
    exits: int = 0
    expect: list[str] = field(default_factory=list)


@dataclass
class Block:
    kind: str  # "console", "file" or "python"
    text: str
    path: str = ""
    commands: list[Command] = field(default_factory=list)


def blocks(doc: str) -> list[Block]:
    """The doc's console blocks (commands and their shown output), python blocks titled with a
    path (files to write) and untitled python blocks (snippets to evaluate), in order."""
    found = []
    for match in FENCE.finditer(doc):
        lang, info, text = match.groups()
        if lang == "console":
            found.append(Block("console", text, commands=console(text)))
        elif lang == "python":
            title = re.search(r'title="([^"]+)"', info)
            found.append(Block("file", text, title.group(1)) if title else Block("python", text))
    return found


def console(text: str) -> list[Command]:
    commands: list[Command] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            exits = EXITS.search(line)
            command = line[2:][: exits.start() - 2] if exits else line[2:]
            commands.append(Command(command, int(exits.group(1)) if exits else 0))
        elif line.strip() and line.strip() != "...":
            commands[-1].expect.append(line)
    return commands


def shown(expected: str) -> re.Pattern[str]:
    """A shown output line as a pattern: ``...`` stands for any text, spaces for any run."""
    parts = [r"\s+".join(map(re.escape, part.split())) for part in expected.split("...")]
    return re.compile(".*".join(parts))


def exported(line: str, env: dict[str, str], cwd: Path) -> dict[str, str]:
    """``env`` after the doc's ``export ...`` line, evaluated once (as the reader's shell does)."""
    done = subprocess.run(
        ["bash", "-c", f"{line} && env -0"], cwd=cwd, env=env, capture_output=True, check=True
    )
    pairs = (item.split("=", 1) for item in done.stdout.decode().split("\0") if "=" in item)
    return dict(pairs)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """This project as a newcomer's clone has it: code linked, what the doc edits copied."""
    root = tmp_path / "project"
    root.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", ".mypy_cache", ".ruff_cache")
    for name in ("env_plugins", "examples", "docs"):
        shutil.copytree(PROJECT / name, root / name, ignore=ignore)
    (root / "tests" / "env_plugins").mkdir(parents=True)
    for name in ("tests/__init__.py", "tests/conftest.py", "tests/helpers.py", "tests/env_plugins/__init__.py",
                 "tests/env_plugins/test_builtin_plugins.py"):
        shutil.copyfile(PROJECT / name, root / name)
    for name in ("pyproject.toml", "noxfile.py", "tasks.py"):
        shutil.copyfile(PROJECT / name, root / name)
    for name in ("releaselib", "openenv_release"):
        (root / name).symlink_to(PROJECT / name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool, module in (("invoke", "invoke"), ("nox", "nox")):
        shim = bin_dir / tool
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m {module} "$@"\n')
        shim.chmod(0o755)
    return root


def run_env(project: Path, tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENENV_RELEASE_", "HF_")) and k != "COLUMNS"  # output is piped
    }
    return env | {
        "PATH": f"{tmp_path / 'bin'}:{Path(sys.executable).parent}:{env.get('PATH', '')}",
        "PYTHONPATH": str(project),
        "TMPDIR": str(tmp_path),  # the doc's mktemp -d
        "HF_HOME": str(tmp_path / "hf-home"),
        "GIT_AUTHOR_NAME": "Newcomer",
        "GIT_AUTHOR_EMAIL": "newcomer@example.com",
        "GIT_COMMITTER_NAME": "Newcomer",
        "GIT_COMMITTER_EMAIL": "newcomer@example.com",
    }


def test_the_doc_has_every_step_and_every_hook() -> None:
    doc = DOC.read_text()
    found = blocks(doc)
    assert [b.path for b in found if b.kind == "file"] == ["env_plugins/tally_env.py"] * 3
    final = [b for b in found if b.kind == "file"][-1].text
    for hook in ("envs", "fixes", "probes", "checks", "allowed_secrets"):
        assert f"def openenv_release_{hook}(" in final, hook
    assert "CanonicalTarget(" in final
    snippets = "\n".join(b.text for b in found if b.kind == "python")
    for need in ("secrets=", "hardware=", "services=", "probe_timeout="):
        assert need in snippets, need
    assert "Signature(" in snippets and "--start-timeout" in doc
    commands = [c.line for b in found for c in b.commands]
    assert any(c.startswith("invoke plugin.new") for c in commands)
    assert any(c.startswith("invoke rehearse") for c in commands)
    assert not any("/tmp/" in c for c in commands), "the doc's scratch folder is mktemp -d's"


def test_the_doc_plugin_passes_ruff(tmp_path: Path) -> None:
    """Each version of the plugin the doc shows passes this project's ruff rules (100 columns)."""
    for block in (b for b in blocks(DOC.read_text()) if b.kind == "file"):
        linted = subprocess.run(
            [sys.executable, "-m", "ruff", "check", "--stdin-filename", block.path, "-"],
            input=block.text, cwd=PROJECT, capture_output=True, text=True, timeout=60,
        )
        assert linted.returncode == 0, linted.stdout + linted.stderr


def test_the_pattern_of_a_shown_line() -> None:
    assert shown("tally_env: FAIL: the server exited").search("tally_env: FAIL: the server exited")
    assert shown("... a ... b  c").search("x a yy b c")
    assert not shown("a ... b").search("b a")


@pytest.mark.e2e
@pytest.mark.slow  # three real servers, the doc run as written: .ci/run runs it
def test_the_walkthrough_runs_as_written(project: Path, tmp_path: Path) -> None:
    env = run_env(project, tmp_path)
    timeout = 300 * WAIT
    for block in blocks(DOC.read_text()):
        if block.kind == "file":
            (project / block.path).write_text(block.text)
            continue
        if block.kind == "python":  # a snippet: it must build valid records
            eval(compile(block.text, str(DOC), "eval"), vars(records).copy())
            continue
        for command in block.commands:
            line = command.line
            if line.startswith("export "):
                env = exported(line, env, project)
                continue
            done = subprocess.run(
                ["bash", "-c", line], cwd=project, env=env, capture_output=True, text=True,
                timeout=timeout,
            )
            output = done.stdout + done.stderr
            assert done.returncode == command.exits, f"$ {line}\n{output}"
            lines = output.splitlines()
            for expected in command.expect:
                pattern = shown(expected)
                assert any(pattern.search(x) for x in lines), f"$ {line}\n{expected}\n{output}"
