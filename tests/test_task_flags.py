"""One short-flag scheme across every task, and output that never folds a word off a terminal."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import pytest
from invoke.collection import Collection
from invoke.tasks import Task

from openenv_release.cli import program
from openenv_release.tasks import ns


def every_task(collection: Collection, prefix: str = "") -> Iterator[tuple[str, Task]]:
    for name, task in collection.tasks.items():
        yield prefix + name, task
    for name, sub in collection.collections.items():
        yield from every_task(sub, f"{prefix}{name}.")


def test_h_is_help_everywhere_and_a_flag_has_one_short_form_or_none() -> None:
    shorts_of: dict[str, set[str]] = defaultdict(set)  # long flag -> its short forms
    longs_of: dict[str, set[str]] = defaultdict(set)  # short form -> the long flags it means
    tasks = dict(every_task(ns))
    assert {"deploy", "verify", "promote", "status", "localhub.serve", "plugin.new"} <= set(tasks)
    for name, task in tasks.items():
        for arg in task.get_arguments():
            long, *short = arg.names
            assert "h" not in short, f"{name}: -h means --{long}, not help"
            shorts_of[long].update(short)
            for s in short:
                longs_of[s].add(long)
            if not short:
                shorts_of.setdefault(long, set())
    assert {long: s for long, s in shorts_of.items() if len(s) > 1} == {}
    assert {s: longs for s, longs in longs_of.items() if len(longs) > 1} == {}
    # every task that has the flag has its short form
    for name, task in tasks.items():
        for arg in task.get_arguments():
            assert set(arg.names[1:]) == shorts_of[arg.names[0]], (name, arg.names)


@pytest.mark.parametrize("task", ["deploy", "verify", "promote", "localhub.seed", "status", "plugin.new"])
def test_dash_h_after_a_task_prints_its_help(task: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        program.run(["openenv-release", task, "-h"])
    assert done.value.code in (0, None)
    out = capsys.readouterr().out
    assert f"Usage: openenv-release [--core-opts] {task}" in out
    if task not in ("localhub.seed", "plugin.new"):
        assert "--hub-endpoint" in out and "-h, --hub-endpoint" not in out


def test_plugin_new_without_env_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        program.run(["openenv-release", "plugin.new"])
    assert done.value.code == 2
    assert "plugin.new needs --env NAME" in capsys.readouterr().err


def test_tables_off_a_terminal_keep_each_record_on_its_line(capsys: pytest.CaptureFixture[str]) -> None:
    from releaselib.console import make_console
    from releaselib.step_tables import print_rows

    reason = "the candidate's reset answered 500 with a traceback from a module nobody imported " * 2
    console = make_console()
    assert not console.is_terminal
    print_rows(console, "promoted", ("env", "candidate", "reason"), [("echo_env", "openenv/echo_env-0.2.2", reason.strip())])
    lines = capsys.readouterr().out.splitlines()
    (row,) = [line for line in lines if "echo_env" in line]
    assert reason.strip() in row and "openenv/echo_env-0.2.2" in row  # not folded at 80 columns
