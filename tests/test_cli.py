"""The console script as a shell user meets it: pipes, --list."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from openenv_release.cli import BROKEN_PIPE
from openenv_release.tasks import ns
from tests.helpers import cli, waits


def test_list_into_a_pipe_closed_early_exits_quietly() -> None:
    """``openenv-release --list | head -3``: the reader is gone before the list is written."""
    read, write = os.pipe()
    os.close(read)
    try:
        result = cli("--list", stdout=write, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(write)
    assert result.stderr == ""
    assert result.returncode == BROKEN_PIPE


def test_a_rich_table_into_a_pipe_closed_early_exits_as_a_broken_pipe(tmp_path) -> None:
    """``envs | head -1``: rich stops at the closed pipe; the exit is 141, not 1 (env failed)."""
    examples = Path(__file__).resolve().parents[1] / "examples"
    read, write = os.pipe()
    os.close(read)
    try:
        result = cli("envs", "--repo", str(examples), stdout=write, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(write)
    assert result.stderr == ""
    assert result.returncode == BROKEN_PIPE


def task_docs() -> dict[str, str]:
    docs = {name: task.__doc__ or "" for name, task in ns.tasks.items()}
    for prefix, sub in ns.collections.items():
        docs.update({f"{prefix}.{name}": task.__doc__ or "" for name, task in sub.tasks.items()})
    return docs


def test_every_task_summary_in_list_is_a_whole_sentence_that_fits() -> None:
    """``--list`` shows a docstring's first line: it must be the whole first paragraph."""
    for name, doc in task_docs().items():
        summary = doc.strip().split("\n\n")[0]
        assert "\n" not in summary, f"{name}: summary spans lines: {summary!r}"
        assert summary.endswith("."), f"{name}: {summary!r}"
        assert len(summary) <= 90, f"{name}: {len(summary)} characters"


SLOW = ("openenv_release.tasks", "rich", "huggingface_hub", "jinja2", "starlette", "uvicorn", "tomlkit", "httpx", "releaselib.localhub")
#: what only a running task needs: --help prints the flags and docstrings without them
TASK_ONLY = (
    "releaselib.config", "releaselib.options", "releaselib.plugins", "releaselib.stage",
    "releaselib.console", "releaselib.ledger", "pluggy", "docker_image", "filelock", "regex",
)  # fmt: skip


def loaded_by(*argv: str, watched: tuple[str, ...] = SLOW) -> tuple[str, list[str]]:
    """The console script's stdout for ``argv``, and which of the ``watched`` imports it loaded."""
    code = (
        "import json, sys\nfrom openenv_release.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print(json.dumps([m for m in {watched!r} if m in sys.modules]))"
    )
    result = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=waits(120))
    *out, loaded = result.stdout.splitlines()
    return "\n".join(out), json.loads(loaded)


def test_version_starts_without_the_task_collection() -> None:
    out, loaded = loaded_by("--version")
    assert out.startswith("openenv-release ") and loaded == []


def test_help_and_envs_start_without_the_hub_client_templates_or_embedded_hub() -> None:
    """Each task imports what it needs when it runs (bench/startup.py measures the CPU)."""
    out, loaded = loaded_by("--help", watched=SLOW + TASK_ONLY)
    assert "Core options" in out and loaded == ["openenv_release.tasks"]
    out, loaded = loaded_by("envs", "--repo", str(Path(__file__).resolve().parents[1] / "examples"))
    assert "echo_env" in out and loaded == ["openenv_release.tasks", "rich"]


def test_help_texts_spelt_out_for_speed_match_the_library() -> None:
    from openenv_release.flags import RELEASE_STEPS
    from openenv_release.verify_tasks import HELP
    from releaselib.release import STEPS
    from releaselib.verify.candidates import DEFAULT_TIMEOUT, PROBE_JOBS

    assert ", ".join(STEPS) == RELEASE_STEPS
    assert f"default {DEFAULT_TIMEOUT:g};" in HELP["timeout"]
    assert f"default {PROBE_JOBS}," in HELP["probe_jobs"]
