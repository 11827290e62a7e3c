"""The console script as a shell user meets it: pipes, --list."""

from __future__ import annotations

import os
import subprocess
import sys

from openenv_release.cli import BROKEN_PIPE
from openenv_release.tasks import ns

MAIN = "from openenv_release.cli import main; main()"


def test_list_into_a_pipe_closed_early_exits_quietly() -> None:
    """``openenv-release --list | head -3``: the reader is gone before the list is written."""
    read, write = os.pipe()
    os.close(read)
    try:
        result = subprocess.run([sys.executable, "-c", MAIN, "--list"], stdout=write, stderr=subprocess.PIPE, text=True, timeout=60)
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


def test_version_starts_without_the_tasks_or_the_hub_client() -> None:
    """--version answers before the task collection (and what it imports) is loaded."""
    code = (
        "import sys\nfrom openenv_release.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('openenv_release.tasks', 'huggingface_hub', 'releaselib.localhub', 'rich')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m in heavy))"
    )
    result = subprocess.run([sys.executable, "-c", code, "--version"], capture_output=True, text=True, timeout=60)
    version, loaded = result.stdout.splitlines()
    assert version.startswith("openenv-release ")
    assert loaded == "[]"
