"""The rehearsal: a whole release of examples/ against the embedded Hub, end to end."""

from __future__ import annotations

import json

import pytest

from releaselib.rehearse import BRIEFING_MARKER, INTENDED, examples_dir, rehearse
from tests.corpus import tree_digest

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory: pytest.TempPathFactory):
    before = tree_digest(examples_dir())
    workdir = tmp_path_factory.mktemp("rehearsal") / "r"
    lines: list[str] = []
    result = rehearse(
        workdir,
        on_event=lines.append,
        on_progress=lambda *seen: PROGRESS.append(seen),
        kept=True,
    )
    return result, workdir, lines, before


#: (space_id, stage) as the rehearsal's live board heard them
PROGRESS: list[tuple[str, str]] = []


def test_the_live_board_hears_each_spaces_upload_build_probe_verdict_and_stop(rehearsal) -> None:
    for env, (outcome, _) in INTENDED.items():
        heard = [stage for space_id, stage in PROGRESS if space_id == f"openenv/{env}-0.2.2"]
        assert heard[0].startswith("uploading ") and heard[1].startswith("deployed "), heard
        assert 1 < heard.index("probing") < heard.index(outcome), heard
        assert heard[-1] == f"{outcome} (stopped)", heard  # paused once judged


def test_each_space_is_paused_once_judged_and_the_board_says_built_not_archived(rehearsal) -> None:
    result, _, _, _ = rehearsal
    for row in result.board:
        assert (row.runtime, row.cells["built"].name) == ("PAUSED", "DONE"), row
    assert result.report["rehearsal"]["spaces"] is None  # no bound asked: the library's default
    assert "Each Space was paused once its verdict was in" in result.briefing.read_text()


def test_every_example_env_ends_as_intended(rehearsal) -> None:
    result, _, _, _ = rehearsal
    assert result.mismatches == []
    decided = {e["env"]: (e["outcome"], e["decision"]) for e in result.report["envs"]}
    assert decided == dict(INTENDED)


def test_the_report_has_the_documented_json_shape(rehearsal) -> None:
    result, _, _, _ = rehearsal
    report = result.report
    assert {"namespace", "version", "ref", "suffix"} <= set(report["release"])
    for entry in report["envs"]:
        assert {"env", "space_id", "commit", "outcome", "decision", "canonical_targets"} <= set(entry)
    targets = {e["env"]: e["canonical_targets"] for e in report["envs"]}
    assert targets["textarena_env"] == ["openenv/sudoku", "openenv/wordle"]
    assert targets["broken_env"] == [] and targets["slow_env"] == []
    assert json.loads(json.dumps(report)) == report


def test_the_briefing_lists_each_env_with_its_decision(rehearsal) -> None:
    result, _, _, _ = rehearsal
    assert result.briefing is not None
    text = result.briefing.read_text()
    for env, (outcome, decision) in INTENDED.items():
        assert f"### {env}: {outcome}, {decision}" in text
    assert "```diff" in text and "<0.2.2" in text  # the failed env's pin diff
    assert json.loads(result.briefing.with_suffix(".json").read_text())["envs"]
    assert "## Evidence for the canonical flips" in text
    assert "- reset: POST /reset sent `{}`, answered 200: `{" in text  # the evidence kept
    assert "- step: POST /step sent `{\"action\":" in text
    assert text.startswith(BRIEFING_MARKER) and "a rehearsal on the embedded Hub, builder `host`" in text
    assert {k: result.report["rehearsal"][k] for k in ("builder", "source", "kept")} == {"builder": "host", "source": "examples/", "kept": True}


def test_the_failed_env_is_pinned_in_the_rehearsal_checkout_only(rehearsal) -> None:
    _, workdir, _, before = rehearsal
    pyproject = (workdir / "OpenEnv" / "envs" / "broken_env" / "pyproject.toml").read_text()
    assert '"openenv-core[core]>=0.2.1,<0.2.2"' in pyproject
    slow = (workdir / "OpenEnv" / "envs" / "slow_env" / "pyproject.toml").read_text()
    assert "<0.2.2" not in slow  # inconclusive: neither promoted nor pinned
    assert tree_digest(examples_dir()) == before


def test_the_board_shows_each_env_with_its_next_action(rehearsal) -> None:
    result, _, _, _ = rehearsal
    rows = {r.env: r.as_json() for r in result.board}
    assert rows["echo_env"]["reset"] == "done" and rows["echo_env"]["promoted"] == "done"
    assert rows["broken_env"]["pinned"] == "done" and rows["broken_env"]["reset"] == "failed"
    assert "then openenv-release release --repo" in rows["slow_env"]["next"]  # a timeout: ours
    assert rows["slow_env"]["next"].startswith("fix the probe problem (")
    assert rows["slow_env"]["next"].endswith("--env slow_env")
