"""A plugin fix that changed a staged tree is recorded with its why by staging (the stage record
in the ledger, ``stage --json``) and shown under its env in the release briefing."""

from __future__ import annotations

from pathlib import Path

import pytest

from releaselib.config import release_key
from releaselib.hookspecs import hookimpl
from releaselib.ledger.ledger import Ledger
from releaselib.ledger.report import build_report, render_briefing
from releaselib.ledger.step_records import record_stage
from releaselib.records import EnvProfile, Fix
from releaselib.stage.discover import discover_envs
from releaselib.stage.stage_env import stage_envs
from tests.test_bad_input import config_for, registry
from tests.test_stage import make_env, write

WHY = "its CMD imports from server/"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "OpenEnv"
    write(root / "pyproject.toml", '[project]\nname = "openenv"\nversion = "0.2.2"\n')
    write(root / "src" / "openenv" / "core" / "__init__.py", "")
    return root


TOKEN = "hf_" + "x" * 34


def add_notes(tree: Path) -> str | None:
    notes = tree / "NOTES.txt"
    if notes.exists():
        return None
    notes.write_text("staged\n")
    return f"NOTES.txt added\n(fetched with {TOKEN})"  # a careless plugin's text


class NotesPlugin:
    @hookimpl
    def openenv_release_envs(self) -> list[EnvProfile]:
        return [EnvProfile("a_env"), EnvProfile("b_env")]

    @hookimpl
    def openenv_release_fixes(self, env: str) -> list[Fix]:
        if env == "a_env":
            return [Fix("add-notes", WHY, add_notes)]
        # b_env's fix finds nothing to do: it is not recorded as applied
        return [Fix("nothing-here", "never applies", lambda tree: None)] if env == "b_env" else []


def test_applied_fixes_reach_the_ledger_and_the_briefing(repo: Path, tmp_path: Path) -> None:
    make_env(repo, "a_env")
    make_env(repo, "b_env")
    config = config_for(repo, tmp_path)
    staged = {s.env: s for s in stage_envs(config, discover_envs(repo), registry(NotesPlugin()))}
    assert staged["a_env"].ok and staged["b_env"].ok, staged
    applied = {"name": "add-notes", "why": WHY, "did": "NOTES.txt added\\n(fetched with hf_***)"}
    assert staged["a_env"].as_json()["fixes"] == [applied]
    assert staged["b_env"].as_json()["fixes"] == []

    ledger = Ledger.load(tmp_path / "ledger.json", release_key(config))
    for result in staged.values():
        record_stage(ledger, result)
    reloaded = Ledger.load(tmp_path / "ledger.json", release_key(config))
    stage_a = reloaded.env("a_env").get("stage")
    assert stage_a is not None and stage_a.data["fixes"] == [applied]

    report = build_report(config, reloaded)
    assert {e["env"]: e["fixes"] for e in report["envs"]} == {"a_env": [applied], "b_env": []}
    briefing = render_briefing(report)
    section_a = briefing.split("### a_env")[1].split("### b_env")[0]
    assert f"- fix applied: `add-notes`, because {WHY} ({applied['did']})" in section_a
    assert TOKEN not in briefing and TOKEN not in (tmp_path / "ledger.json").read_text()
    assert "fix applied" not in briefing.split("### b_env")[1]


def test_a_ledger_of_bare_fix_names_still_briefs(tmp_path: Path, repo: Path) -> None:
    config = config_for(repo, tmp_path)
    ledger = Ledger.load(tmp_path / "ledger.json", release_key(config))
    ledger.record("a_env", "stage", manifest_hash="h", fixes=["add-notes"])
    briefing = render_briefing(build_report(config, ledger))
    assert "- fix applied: `add-notes`\n" in briefing
