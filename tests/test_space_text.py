"""Text from a Space is data: never parsed as rich markup, and a token in it is redacted before
it is printed, recorded or written (issue 26). Against the embedded Hub, with real openenv-core
servers: one env's step fails with such text, another crashes at start with it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from releaselib.hub.deploy import deploy_all
from releaselib.localhub import LocalHub
from releaselib.space_ids import Canonicals
from releaselib.stage.secretscan import redact_secrets
from tests.helpers import offline, wait_flag, waits
from tests.test_secret_kinds import KINDS
from tests.test_verify import STEP_RAISES, connect, release_config, space_tree, staged_space

#: A GitHub token's shape, made up (36 characters after ``ghp_``).
TOKEN = "ghp_" + "Zq8Lm3Np5Rt7Vx2Kb9Wc4Yd6Fh1Jg0AsDe3R"
#: What the Space says: markup-like, a token, and a placeholder the ledger's own check refused.
WORDS = f"[/INST] refused: token {TOKEN} for hf_{'x' * 34}"
CLI = "from openenv_release.cli import main; main()"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalHub]:
    """step_env's step raises WORDS (sent back over /ws); crash_env raises them at import."""
    root = tmp_path_factory.mktemp("space-text")
    config = release_config(root)
    step = space_tree(root / "staging" / "step_env", "echo_env")
    (step / "server" / "echo_environment.py").write_text(
        STEP_RAISES.replace("'step is broken'", repr(WORDS))
    )
    crash = space_tree(root / "staging" / "crash_env", "echo_env")
    app = crash / "server" / "app.py"
    app.write_text(f"raise RuntimeError({WORDS!r})\n" + app.read_text())
    staged = [staged_space(config, "step_env", step), staged_space(config, "crash_env", crash)]
    with LocalHub(root / "hub") as running:
        fence = Canonicals.of({"step_env": "step_env", "crash_env": "crash_env"}, ())
        deployed = deploy_all(connect(running), config, staged, fence=fence)
        assert all(d.ok for d in deployed), [d.error for d in deployed]
        yield running


def cli(hub: LocalHub, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **hub.client_env(),
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "COLUMNS": "400",  # one table row a line, so a redacted token is not folded
        **offline(home),
    }
    return subprocess.run(
        [sys.executable, "-c", CLI, *args], env=env, capture_output=True, text=True, timeout=waits(180)
    )


def test_a_spaces_words_are_printed_as_they_are_and_its_token_redacted_everywhere(
    hub: LocalHub, tmp_path: Path
) -> None:
    checkout = tmp_path / "OpenEnv"
    (checkout / "envs").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text('[project]\nname = "openenv"\nversion = "0.2.2"\n')
    ledger = tmp_path / "ledger-0.2.2.json"
    repo = ("--repo", str(checkout), "--ledger", str(ledger))
    envs = ("--env", "step_env", "--env", "crash_env")
    verify = cli(hub, tmp_path, "verify", *repo, *envs, "--wait", wait_flag(60))
    # recorded and printed (exit 1: a FAIL), not a markup error (exit 70)
    assert verify.returncode == 1, verify.stdout + verify.stderr
    assert "[/INST] refused: token ghp_*** for hf_***" in verify.stdout
    recorded = json.loads(ledger.read_text())["envs"]
    assert {env: recorded[env]["verify"]["outcome"] for env in recorded} == {
        "step_env": "FAIL",
        "crash_env": "FAIL",
    }
    assert "ghp_***" in recorded["crash_env"]["verify"]["runtime_error"]
    report = cli(hub, tmp_path, "report", *repo)
    assert report.returncode == 0, report.stderr
    briefings = sorted(tmp_path.glob("briefing-0.2.2.*"))
    assert [b.suffix for b in briefings] == [".json", ".md"]
    for text in (verify.stdout, verify.stderr, ledger.read_text(), report.stdout):
        assert TOKEN not in text and TOKEN[4:] not in text
    for briefing in briefings:
        text = briefing.read_text()
        assert "ghp_***" in text and TOKEN[4:] not in text, briefing.name


def test_redaction_uses_the_staging_detectors_and_keeps_only_a_public_prefix() -> None:
    for env, (_, text, _, kind, value) in KINDS.items():
        shown = redact_secrets(f"RuntimeError: {text}")
        assert value not in shown and "***" in shown, (env, kind)
    line = f"clone https://bob:correct-horse-9@git.example failed; {TOKEN}. {WORDS}"
    assert redact_secrets(line) == (
        "clone https://bob:***@git.example failed; ghp_***. [/INST] refused: token ghp_*** for hf_***"
    )
