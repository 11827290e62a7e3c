"""``release`` rerun through FAIL -> pinned -> fix -> PASS (held: canonical missing) -> lifted ->
promoted, on the embedded Hub with a real openenv-core server: after every run the briefing and
the board say what the ledger's whole history says, and their commands run as printed."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from huggingface_hub import HfApi

from openenv_release.cli import program
from releaselib.localhub import LocalHub
from releaselib.rehearse import copy_checkout, examples_dir
from tests.helpers import offline, wait_flag

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # whole releases, run again: .ci/run runs them

ENV = "broken_env"
CANONICAL = f"openenv/{ENV}"
BROKEN = '        raise RuntimeError("dataset missing: reset cannot build an episode")\n'
FIXED = "        return BrokenObservation(value=0, reward=0.0, done=False)\n"


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    """The console script in this process: exit code, stdout, stderr."""
    try:
        program.run(["openenv-release", *argv])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def hub_api(hub: LocalHub) -> HfApi:
    return HfApi(endpoint=hub.endpoint, token=hub.token)


def briefing(staging: Path) -> tuple[str, dict[str, Any]]:
    stem = "briefing-openenv-0.2.2"
    return (staging / f"{stem}.md").read_text(), json.loads((staging / f"{stem}.json").read_text())


def section(text: str, title: str) -> str:
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_reruns_keep_the_briefing_and_the_board_true(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "source"
    shutil.copytree(examples_dir(), source)
    for env in [p.name for p in (source / "envs").iterdir() if p.name != ENV]:
        shutil.rmtree(source / "envs" / env)
    repo = copy_checkout(source, tmp_path / "OpenEnv")
    pyproject = repo / "envs" / ENV / "pyproject.toml"
    hub = LocalHub(tmp_path / "hub").start()
    try:
        for key, value in {**hub.client_env(), **offline(tmp_path)}.items():
            monkeypatch.setenv(key, value)
        staging = tmp_path / "staging"
        flags = ["--repo", str(repo), "--staging-dir", str(staging), "--hub-endpoint", hub.endpoint]
        release = ["release", *flags, "--timeout", wait_flag(5), "--wait", wait_flag(120), "--allow-embedded-hub"]
        status = ["status", *flags, "--json"]

        # --from a step the ledger never reached: nothing to redo
        code, _, err = run(capsys, [*release, "--from", "verify"])
        assert code == 2 and "nothing to redo: the ledger has no verify records" in err

        # run 1: the Space answers 500 on /reset -> FAIL (Space evidence), pinned
        code, out, err = run(capsys, release)
        assert code == 1 and out.count("briefing:") == 1
        # not a terminal: the progress board is one plain line per change on stderr
        progress = [line.split(": ", 1)[1] for line in err.splitlines() if line.startswith(f"release {CANONICAL}-0.2.2: ")]
        assert progress[0].startswith("uploading ") and progress[-1].startswith("FAIL"), progress
        assert "probing" in progress and "RUNNING" not in progress[-1]
        text, report = briefing(staging)
        (entry,) = report["envs"]
        assert (entry["outcome"], entry["decision"]) == ("FAIL", "pinned")
        assert entry["evidence"]["run"] == 1 and not entry["our_error"]
        assert "<0.2.2" in pyproject.read_text() and "<0.2.2" in entry["pin_diff"]
        assert ENV in section(text, "Failed (Space evidence)")
        assert "None." in section(text, "Inconclusive (probe problem)")
        assert "No canonical Space holds" in section(text, "Evidence for the canonical flips")
        code, out, _ = run(capsys, status)
        assert code == 0 and json.loads(out)[0]["next"].startswith("fix the env, then openenv-release release")

        # a rerun without a fix verifies again (still FAIL); the pin of run 1 still stands
        code, out, _ = run(capsys, release)
        _, report = briefing(staging)
        (entry,) = report["envs"]
        assert code == 1 and entry["evidence"]["run"] == 2 and entry["decision"] == "pinned"
        assert entry["pin_run"] == 1 and "<0.2.2" in entry["pin_diff"]

        # fix the env; the rerun redeploys, verifies PASS and lifts the pin; the canonical does
        # not exist yet (and the tree it verified still carried the pin), so it is held
        server = repo / "envs" / ENV / "server" / "app.py"
        server.write_text(server.read_text().replace(BROKEN, FIXED))
        code, out, _ = run(capsys, release)
        assert code == 0, out
        text, report = briefing(staging)
        (entry,) = report["envs"]
        assert (entry["outcome"], entry["decision"], entry["evidence"]["run"]) == ("PASS", "held", 3)
        assert f"- decision: held, {entry['decision_reason']}" in text
        assert entry["pin_diff"] == "" and "<0.2.2" in entry["lift_diff"]
        assert "<0.2.2" not in pyproject.read_text()
        assert "None." in section(text, "Failed (Space evidence)")
        assert "No canonical Space holds" in section(text, "Evidence for the canonical flips")
        outputs, reasons = [out], [entry["decision_reason"]]

        # the board's next action, run as printed, leads to the promotion
        for _ in range(3):
            (row,) = json.loads(run(capsys, status)[1])
            assert row["next"].startswith("openenv-release "), row
            code, out, err = run(capsys, shlex.split(row["next"])[1:])
            assert code == 0, (row["next"], out, err)
            assert run(capsys, ["report", "--repo", str(repo), "--staging-dir", str(staging)])[0] == 0
            text, report = briefing(staging)
            (entry,) = report["envs"]
            outputs.append(out)
            reasons.append(entry["decision_reason"])
            if entry["decision"] == "promoted":
                break
        missing = f"canonical {CANONICAL} missing, pass --create-missing"
        assert missing in reasons, reasons
        assert any(f"promote {ENV}: held ({missing})\n" in o for o in outputs)
        promote_lines = [line for o in outputs for line in o.splitlines() if line.startswith("promote ")]
        assert promote_lines and not any(line.endswith(" ") for line in promote_lines)
        assert all(o.count("briefing:") <= 1 for o in outputs)
        assert (entry["outcome"], entry["decision"]) == ("PASS", "promoted")
        assert entry["canonical_targets"] == [CANONICAL]
        (flip,) = report["evidence"]
        assert flip["env"] == ENV and flip["targets"] == [CANONICAL]
        assert flip["run"] == entry["evidence"]["run"] >= 3
        assert entry["pin_diff"] == "" and "<0.2.2" not in pyproject.read_text()
        held = hub_api(hub).space_info(CANONICAL).sha
        assert flip["canonicals"] == [{"id": CANONICAL, "commit": held}] == entry["canonicals"]
        assert f"| {ENV} | `{CANONICAL}` (`{held[:12]}`) |" in section(text, "Evidence for the canonical flips")
        assert f"- canonical `{CANONICAL}` holds `{held}`" in text
        assert f"| collection | `{report['collection']}` |" in text and report["collection"]
        cleanup = json.loads(run(capsys, status)[1])[0]["next"]
        assert cleanup.startswith("openenv-release cleanup") and cleanup.endswith(" --archive --yes")

        # every reproduce command runs as printed and changes nothing
        before = hub.counters().commits
        for line in report["reproduce"]:
            code, out, err = run(capsys, shlex.split(line)[1:])
            assert code == 0, (line, out, err)
        assert hub.counters().commits == before
        assert briefing(staging)[1]["envs"] == report["envs"]

        # archived, the candidate shows as paused once the briefing is written again
        assert run(capsys, shlex.split(cleanup)[1:])[0] == 0
        assert run(capsys, ["report", "--repo", str(repo), "--staging-dir", str(staging)])[0] == 0
        text, report = briefing(staging)
        assert report["envs"][0]["runtime"] == "PAUSED" and "- runtime: PAUSED now" in text
        assert "**1 env**:" in text
    finally:
        hub.stop()
