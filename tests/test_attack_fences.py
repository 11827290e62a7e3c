"""Fences that a hostile tester got through: keys in prose, credentials in the Hub endpoint, a
--ledger inside a checkout that verify found without --repo."""

from __future__ import annotations

import shutil
from pathlib import Path

from releaselib.stage.secretscan import holds_secret, redact_secrets
from tests.helpers import PROJECT, user_cli

ANTHROPIC = "sk-ant-api03-" + ("Ab3dE" * 19)[:93] + "AA"
GOOGLE = "AIzaSyA1234567890abcdefghijklmnopqrstuv"
WANDB = "0123456789abcdef0123456789abcdef01234567"


def test_provider_keys_in_prose_are_redacted_keeping_only_their_prefix() -> None:
    said = f"upstream rejected key {ANTHROPIC}. google key {GOOGLE}, WANDB_API_KEY={WANDB}"
    shown = redact_secrets(said)
    for secret in (ANTHROPIC[13:], GOOGLE[4:], WANDB):
        assert secret not in shown
    assert "sk-ant-api03-***." in shown and "AIza***," in shown and "WANDB_API_KEY=***" in shown
    assert redact_secrets(f"envs/echo_env/{ANTHROPIC}.txt") == "envs/echo_env/sk-ant-api03-***.txt"


def test_words_that_only_start_like_a_key_are_left_alone() -> None:
    for text in ("sk-learn-experiments-folder", "./hf-staging", "skip-this-task-queue"):
        assert redact_secrets(text) == text and not holds_secret(text)


def test_a_hub_endpoint_holding_credentials_is_refused_without_printing_them(tmp_path: Path) -> None:
    checkout = tmp_path / "OpenEnv"
    shutil.copytree(PROJECT / "examples", checkout)
    token = "hf_" + "Q" * 4 + "wErTyUiOpAsDfGhJkLzXcVbNm12345"
    for endpoint in (f"http://x:{token}@127.0.0.1:9", "http://user:pw-9f3Kq2@127.0.0.1:9"):
        result = user_cli("stage", "--repo", str(checkout), "--env", "echo_env", HF_ENDPOINT=endpoint)
        assert result.returncode == 2, result.stderr
        assert "HF_ENDPOINT" in result.stderr
        assert token not in result.stdout + result.stderr and "pw-9f3Kq2" not in result.stderr


def test_verify_never_writes_its_ledger_into_the_checkout_it_runs_in(tmp_path: Path) -> None:
    checkout = tmp_path / "OpenEnv"
    shutil.copytree(PROJECT / "examples", checkout)
    for given in ("envs/ledger.json", "ledger.json", "src/x/ledger.json"):
        result = user_cli(
            "verify", "--namespace", "openenv", "--version", "0.2.2", "--env", "echo_env",
            "--ledger", given, cwd=checkout,
        )
        assert result.returncode == 2 and "inside the checkout" in result.stderr, result.stderr
    assert not list(checkout.rglob("ledger.json*"))


def test_a_briefing_is_never_written_over_a_ledger_named_json(tmp_path: Path) -> None:
    """``report --ledger my.json`` wrote the briefing's JSON over the ledger it read."""
    from releaselib.ledger.paths import briefing_stem

    assert briefing_stem(Path("s/ledger-openenv-0.2.2.json")) == "briefing-openenv-0.2.2"
    assert briefing_stem(tmp_path / "my.json") == "briefing-my"
    checkout = tmp_path / "OpenEnv"
    shutil.copytree(PROJECT / "examples", checkout)
    ledger = tmp_path / "my.json"
    flags = ("--repo", str(checkout), "--staging-dir", str(tmp_path / "s"), "--ledger", str(ledger))
    assert user_cli("stage", *flags[:4], "--env", "echo_env").returncode == 0
    shutil.copyfile(tmp_path / "s" / "ledger-openenv-0.2.2.json", ledger)
    kept = ledger.read_text()
    result = user_cli("report", *flags)
    assert result.returncode == 0, result.stderr
    assert ledger.read_text() == kept
    assert (tmp_path / "briefing-my.json").is_file() and (tmp_path / "briefing-my.md").is_file()
