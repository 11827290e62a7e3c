"""A venv build that fails for what the embedded Hub's builder cannot do (reach hosts beyond the
package registries, run RUN steps that are not Python installs) is the builder's doing: its
last line is marked, so verify calls it INCONCLUSIVE, never the Space's FAIL (openapp_env and
unity_env were pinned in a dress rehearsal for exactly this)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from releaselib.hub.runtime import BUILDER_MADE
from releaselib.space_runtime.builder_limits import builders_doing, skipped_steps
from releaselib.space_runtime.builders import VenvBuilder
from releaselib.space_runtime.plan import BuildError
from tests.helpers import waits
from tests.space_runtime.test_installs import layout_of

CLONED = (
    "FROM python:3.11\n"
    "RUN apt-get update && apt-get install -y git build-essential\n"
    "RUN git clone https://github.com/example/openapps /app\n"
    "RUN pip install -e /app\n"
    'CMD ["python"]\n'
)


def test_the_steps_the_builder_does_not_run_are_named(tmp_path: Path) -> None:
    layout = layout_of(tmp_path, CLONED + "RUN mkdir -p /data && echo ok\n")
    assert [run.line for run in skipped_steps(layout)] == [2, 3]


def test_a_mention_a_git_install_or_a_package_list_update_is_no_skipped_step(tmp_path: Path) -> None:
    """Read from parsed commands: ``echo apt-get`` runs nothing, the venv builder has the
    host's git (staging adds a git install before git+ requirements), an update installs
    nothing."""
    dockerfile = (
        "FROM python:3.11\n"
        'RUN echo "no apt-get or curl needed here"\n'
        "RUN apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/*\n"
        "RUN apt-get update\n"
        'RUN sh -c "wget -q https://example.com/data.bin"\n'
        'CMD ["python"]\n'
    )
    assert [run.line for run in skipped_steps(layout_of(tmp_path, dockerfile))] == [5]


def test_a_resolver_with_no_solution_is_the_spaces_own_unless_a_skipped_step_fetched_files(tmp_path: Path) -> None:
    apt = "FROM python:3.11\nRUN apt-get update && apt-get install -y libgl1\nRUN echo\nRUN pip install x\nCMD [\"python\"]\n"
    skipped = skipped_steps(layout_of(tmp_path, apt))
    for said in (
        "ERROR: No matching distribution found for requests>=999",
        "  No solution found when resolving dependencies:\n  we can conclude that your requirements are unsatisfiable.",
    ):
        assert builders_doing(said, skipped, 4) is None
    assert builders_doing("does not appear to be a Python project", skipped, 4) is not None
    assert builders_doing("ERROR: No matching distribution found for x", skipped_steps(layout_of(tmp_path / "c", CLONED)), 4) is not None
    fetched = skipped_steps(layout_of(tmp_path / "f", "FROM python:3.11\nRUN curl -o /w/x-1.0-py3-none-any.whl https://example.com/x.whl\nRUN pip install --find-links /w x==1.0\nCMD [\"python\"]\n"))
    said = "ERROR: No matching distribution found for x==1.0"
    assert builders_doing(said, fetched, 3) is not None  # the wheel a skipped curl would fetch


def test_an_unreachable_host_is_the_builders_doing_and_an_own_failure_is_not() -> None:
    github = "fatal: unable to access 'https://github.com/x/y.git/': Could not resolve host: github.com"
    said = builders_doing(github, (), 7)
    assert said is not None and "Could not resolve host: github.com" in said and "line 7" in said
    own = "ERROR: No matching distribution found for nosuchpackage==9"
    assert builders_doing(own, (), 7) is None
    assert builders_doing("Failed to connect to 127.0.0.1 port 9: refused", (), 7) is None


def test_a_failure_after_a_step_the_builder_skipped_is_its_own_doing(tmp_path: Path) -> None:
    layout = layout_of(tmp_path, CLONED)
    builder = VenvBuilder(tmp_path / "builder")
    with pytest.raises(BuildError) as raised:
        builder.build(layout, tmp_path / "env", tmp_path / "build.log")
    last = raised.value.message.splitlines()[-1]
    assert last.startswith(BUILDER_MADE) and "RUN line(s) 2, 3" in last and "git clone" not in last
    assert "a real Space build runs them" in last


def test_a_failure_with_nothing_skipped_stays_the_spaces(tmp_path: Path) -> None:
    layout = layout_of(tmp_path, 'FROM python:3.11\nRUN pip install -e /app\nCMD ["python"]\n')
    with pytest.raises(BuildError) as raised:
        VenvBuilder(tmp_path / "builder").build(layout, tmp_path / "env", tmp_path / "build.log")
    assert BUILDER_MADE not in raised.value.message


def test_builds_of_one_commit_never_install_into_it_at_once_and_a_factory_reboot_builds_anew(
    tmp_path: Path,
) -> None:
    """Two builds of one commit at once (a restart during its build): one installs, the other
    reuses it or, superseded by it, does nothing, never deleting the folder the first is
    installing into (uv: "A virtual environment already exists"). Later, a plain restart reuses
    the build and a factory reboot (``fresh``) installs anew."""
    layout = layout_of(tmp_path, 'FROM python:3.11\nCMD ["python"]\n')
    builder, env = VenvBuilder(tmp_path / "builder"), tmp_path / "env"
    together = threading.Barrier(2)

    def build(log: str) -> None:
        together.wait()
        builder.build(layout, env, tmp_path / log)

    threads = [threading.Thread(target=build, args=(f"{n}.log",)) for n in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(waits(60))
    logs = [(tmp_path / f"{n}.log") for n in (1, 2)]
    installed = [log for log in logs if log.exists() and not log.read_text().startswith("reusing")]
    assert len(installed) == 1 and (env / "bin" / "python").exists()
    builder.build(layout, env, tmp_path / "restart.log")
    assert (tmp_path / "restart.log").read_text().startswith("reusing")
    builder.build(layout, env, tmp_path / "factory.log", fresh=True)
    assert not (tmp_path / "factory.log").read_text().startswith("reusing")
