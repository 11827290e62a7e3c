"""A release done step by step (deploy, verify, promote --verify, collection, pin) records itself as one
``release`` run does: ``status --json`` and ``report --json`` match, on the bundled examples
against the embedded Hub."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from huggingface_hub import HfApi

from openenv_release.cli import program
from releaselib.localhub import LocalHub
from releaselib.rehearse import copy_checkout, examples_dir
from tests.helpers import offline

#: two whole releases with 6 Spaces; each step is also tested alone by default (test_deploy,
#: test_verify, test_release_decisions, test_promote*, test_collection, test_pin_step)
pytestmark = pytest.mark.slow
ENVS = ("broken_env", "echo_env")  # a FAIL (pinned) and a PASS (promoted, collected)
#: Who recorded a verdict (a run of release, or a standalone task) and how long probes took:
#: everything else in the board and the briefing must match.
VARYING = frozenset({"run", "runs", "by", "pin_run", "seconds"})


def checkout(tmp: Path) -> Path:
    source = tmp / "source"
    shutil.copytree(examples_dir(), source)
    for env in (source / "envs").iterdir():
        if env.name not in ENVS:
            shutil.rmtree(env)
    return copy_checkout(source, tmp / "OpenEnv")


def run_task(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    try:
        program.run(["openenv-release", *argv])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().out


def normalised(doc: Any, tmp: Path, hub: LocalHub) -> Any:
    """``doc`` with what differs between two equal releases made apart (folders, the Hub's
    address and ports, shas, times) replaced by placeholders, and ``VARYING`` left out."""
    if isinstance(doc, dict):
        return {k: normalised(v, tmp, hub) for k, v in doc.items() if k not in VARYING}
    if isinstance(doc, list):
        return [normalised(v, tmp, hub) for v in doc]
    if not isinstance(doc, str):
        return doc
    text = doc.replace(str(tmp), "<tmp>").replace(hub.endpoint, "<hub>")
    text = text.replace(" --allow-embedded-hub", "")  # release records its flags, steps do not
    text = re.sub(r"127\.0\.0\.1:\d+", "<domain>", text)
    text = re.sub(r"\b[0-9a-f]{40}\b", "<sha>", text)
    text = re.sub(r"\b[0-9a-f]{12}\b", "<sha>", text)
    text = re.sub(r"-[0-9a-f]{24}\b", "-<id>", text)  # a collection slug's id
    return re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+(\+00:00|Z)?", "<at>", text)


def differences(got: Any, want: Any, at: str = "") -> list[str]:
    """Where ``got`` and ``want`` differ, one line each: the path and both values."""
    if isinstance(got, dict) and isinstance(want, dict):
        keys = dict.fromkeys([*got, *want])
        return [d for k in keys for d in differences(got.get(k), want.get(k), f"{at}.{k}")]
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        return [d for i, (g, w) in enumerate(zip(got, want, strict=True)) for d in differences(g, w, f"{at}[{i}]")]
    return [] if got == want else [f"{at}: {got!r} != {want!r}"]


def board_and_briefing(tmp: Path, hub: LocalHub, capsys: pytest.CaptureFixture[str], common: tuple[str, ...]) -> tuple[Any, Any]:
    code, board = run_task(capsys, "status", *common, "--json")
    assert code == 0
    code, briefing = run_task(capsys, "report", *common[:4], "--json")  # report asks no Hub
    assert code == 0
    return normalised(json.loads(board), tmp, hub), normalised(json.loads(briefing), tmp, hub)


def prepared(tmp: Path, hub: LocalHub, monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    """A fresh checkout of the examples, the Hub's canonical echo_env, the client's variables;
    the flags every task gets."""
    HfApi(endpoint=hub.endpoint, token=hub.token).create_repo("openenv/echo_env", repo_type="space", space_sdk="docker")
    for key, value in {**hub.client_env(), **offline(tmp)}.items():
        monkeypatch.setenv(key, value)
    return ("--repo", str(checkout(tmp)), "--staging-dir", str(tmp / "staging"), "--hub-endpoint", hub.endpoint)


@pytest.mark.e2e
def test_step_by_step_gives_the_board_and_briefing_of_one_release(localhub_factory, tmp_path: Path, monkeypatch, capsys) -> None:
    for name, value in {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}.items():
        monkeypatch.setenv(name, value)
    at_once, hub = tmp_path / "release", localhub_factory()
    common = prepared(at_once, hub, monkeypatch)
    embedded = "--allow-embedded-hub"  # pin writes this test's checkout on the embedded Hub's verdicts
    assert run_task(capsys, "release", *common, embedded)[0] == 1  # broken_env FAILs
    want = board_and_briefing(at_once, hub, capsys, common)

    by_step, hub = tmp_path / "steps", localhub_factory()
    common = prepared(by_step, hub, monkeypatch)
    assert run_task(capsys, "status", *common)[0] == 2  # no ledger yet: nothing has run
    for step, code in (("deploy", 0), ("verify", 1), ("promote", 0), ("collection", 0), ("pin", 0)):
        flags = {"pin": (embedded,), "promote": ("--verify",)}.get(step, ())  # as release does
        assert run_task(capsys, step, *common, *flags)[0] == code, step
        assert run_task(capsys, "status", *common)[0] == 0, f"status after {step}"
    board, briefing = board_and_briefing(by_step, hub, capsys, common)

    assert board == want[0], differences(board, want[0])
    assert {r["env"]: (r["promoted"], r["collected"], r["pinned"]) for r in board} == {
        "broken_env": ("skipped", "skipped", "done"), "echo_env": ("done", "done", "skipped"),
    }
    assert briefing == want[1], differences(briefing, want[1])
