"""Secrets: the Hub token never leaves the process, and credential files are never staged.

A canary token is the only token the embedded Hub accepts. Every task a release uses runs through
the console script with it as HF_TOKEN; it must not show up in stdout, stderr, the ledger, the
briefing, the staged trees or what the Hub received.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from invoke.exceptions import Exit

from openenv_release.common import reported
from releaselib.localhub import LocalHub
from releaselib.stage.sources import CREDENTIALS_WHY
from tests.corpus import tree_digest
from tests.helpers import EXAMPLES, user_cli, wait_flag

CANARY = "hf_CANARYcanary0123456789abcdefghijklmnop"
#: Checkout path -> content. Each looks like credentials and must be left out, and recorded.
CREDENTIAL_FILES = {
    ".env": f"HF_TOKEN={CANARY}\n",
    ".env.production": f"HF_TOKEN={CANARY}\n",
    ".envrc": f"export HF_TOKEN={CANARY}\n",
    ".huggingface/token": CANARY,
    ".cache/huggingface/stored_tokens": f"[default]\nhf_token = {CANARY}\n",
    ".netrc": f"machine huggingface.co login x password {CANARY}\n",
    ".npmrc": "//registry.npmjs.org/:_authToken=npm_x\n",
    ".pypirc": "[pypi]\npassword = pypi-x\n",
    ".git-credentials": f"https://x:{CANARY}@huggingface.co\n",
    "credentials.json": '{"token": "x"}\n',
    "server/credentials-prod.json": '{"token": "x"}\n',
    ".aws/credentials": "[default]\naws_secret_access_key = x\n",
    ".ssh/config": "Host x\n",
    "id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n",
    "deploy/id_ed25519.pub": "ssh-ed25519 AAAA x\n",
    "certs/dev.pem": "-----BEGIN CERTIFICATE-----\n",
    "certs/dev.key": "-----BEGIN PRIVATE KEY-----\n",
    "certs/bundle.P12": "x",
}
#: Files that only sound like credentials: they are staged.
ORDINARY_FILES = {
    "tokenizer.json": "{}\n",
    "keys.py": "KEYS = ()\n",
    "environment.md": "# env\n",
    "huggingface/tokenizer.py": "",
    "server/keyboard.py": "",
}
ENV = "echo_env"
#: A plugin whose error message carries the token it read (as a careless download helper would).
LEAKY_PLUGIN = """\
import os
from releaselib.hookspecs import hookimpl
from releaselib.records import Fix

def fetch(tree):
    raise RuntimeError(f"GET https://huggingface.co/x failed with Authorization: Bearer {os.environ['HF_TOKEN']}")

@hookimpl
def openenv_release_fixes():  # cross-cutting: echo_env is claimed by its built-in plugin
    return [Fix("fetch-assets", "download assets", fetch)]
"""


@dataclass
class World:
    hub: LocalHub
    checkout: Path
    staging: Path
    outputs: dict[str, subprocess.CompletedProcess[str]]

    def run(self, name: str, *args: str, where: str = "--staging-dir") -> subprocess.CompletedProcess[str]:
        """``where`` is how the task finds the staging dir: itself, or the ledger in it."""
        place = self.staging if where == "--staging-dir" else self.staging / "ledger-openenv-0.2.2.json"
        result = user_cli(*args, "--repo", str(self.checkout), where, str(place), **self.hub.client_env())
        self.outputs[name] = result
        return result


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One checkout with echo_env and credential files, released against a Hub whose only
    accepted token is the canary: stage, deploy, release, verify, status, some with --debug."""
    root = tmp_path_factory.mktemp("secrets")
    checkout = root / "OpenEnv"
    shutil.copytree(EXAMPLES, checkout, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    for env in (checkout / "envs").iterdir():
        if env.name != ENV:
            shutil.rmtree(env)
    for rel, text in {**CREDENTIAL_FILES, **ORDINARY_FILES}.items():
        path = checkout / "envs" / ENV / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    before = tree_digest(checkout)
    with LocalHub(root / "hub", token=CANARY) as hub:
        world = World(hub, checkout, root / "staging", {})
        world.run("stage", "stage", "--json")
        world.run("deploy", "deploy", "--env", ENV, "--json", "--debug")
        world.run("release", "release", "--env", ENV, "--wait", wait_flag(120), "--json")
        world.run("verify", "verify", "--env", ENV, "--wait", wait_flag(120), "--json", "--debug", where="--ledger")
        world.run("status", "status", "--json")
        world.run("status-debug", "--debug", "status")
        yield world
    assert tree_digest(checkout) == before


@pytest.mark.parametrize("name", ["stage", "deploy", "release", "verify", "status", "status-debug"])
def test_the_token_is_in_no_output(world: World, name: str) -> None:
    result = world.outputs[name]
    assert result.returncode == 0, result.stdout + result.stderr
    assert CANARY not in result.stdout and CANARY not in result.stderr
    assert "Traceback" not in result.stderr


def test_the_release_did_use_the_token(world: World) -> None:
    report = json.loads(world.outputs["release"].stdout)
    [entry] = report["envs"]
    assert entry["env"] == ENV and entry["outcome"] == "PASS"
    assert world.hub.counters().commits >= 1


def test_the_token_is_in_no_file_the_tool_wrote_or_sent(world: World) -> None:
    """The staging dir (staged trees, manifests, ledger, briefing) and the Hub's stored repos,
    commits and blobs; the Hub's own hub.json holds its token by design."""
    written = [p for p in world.staging.rglob("*") if p.is_file()]
    sent = [p for p in world.hub.state_dir.rglob("*") if p.is_file() and p.name != "hub.json"]
    assert any(p.name.startswith("ledger-") for p in written)
    assert any(p.name.startswith("briefing-") for p in written)
    assert any(p.parent.name == "blobs" or p.parent.parent.name == "blobs" for p in sent)
    leaks = [p for p in written + sent if CANARY.encode() in p.read_bytes()]
    assert leaks == []


def test_credential_files_are_never_staged_and_each_is_reported(world: World) -> None:
    [staged] = json.loads(world.outputs["stage"].stdout)["envs"]
    left_out = {c["file"] for c in staged["changes"] if c["why"] == CREDENTIALS_WHY}
    assert left_out == {f"envs/{ENV}/{rel}" for rel in CREDENTIAL_FILES}
    tree = Path(staged["staged_dir"])
    for rel in CREDENTIAL_FILES:
        assert not (tree / rel).exists() and not (tree / "envs" / ENV / rel).exists(), rel
    for rel in ORDINARY_FILES:
        assert (tree / rel).is_file() and (tree / "envs" / ENV / rel).is_file(), rel
    uploaded = world.hub.state_dir / "blobs"
    assert not any(b"BEGIN PRIVATE KEY" in p.read_bytes() for p in uploaded.rglob("*") if p.is_file())


def test_stage_says_what_it_left_out(world: World, tmp_path: Path) -> None:
    result = user_cli("stage", "--repo", str(world.checkout), "--staging-dir", str(tmp_path / "s"))
    assert result.returncode == 0, result.stderr
    assert f"{ENV}: left out envs/{ENV}/.env ({CREDENTIALS_WHY})" in result.stdout


def test_a_plugin_error_carrying_the_token_is_redacted(world: World, tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    info = plugins / "leaky-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: leaky\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[openenv_release]\nleaky = leaky\n")
    (plugins / "leaky.py").write_text(LEAKY_PLUGIN)
    staging = tmp_path / "staging"
    result = user_cli(
        "--debug", "release", "--repo", str(world.checkout), "--staging-dir", str(staging),
        "--env", ENV, "--until", "deploy", "--json",
        **{**world.hub.client_env(), "PYTHONPATH": str(plugins)},
    )
    assert result.returncode == 1, result.stdout + result.stderr  # its env failed
    assert CANARY not in result.stdout + result.stderr
    assert "hf_***" in result.stderr  # the event line of the failed stage
    assert "Traceback" not in result.stderr
    [ledger] = staging.glob("ledger-*.json")
    stage = json.loads(ledger.read_text())["envs"][ENV]["stage"]
    assert stage["status"] == "failed" and "fix fetch-assets of plugin leaky failed" in stage["error"]
    assert CANARY not in ledger.read_text()


def test_a_debug_traceback_is_redacted(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The error policy itself: an internal error whose message holds the token, under --debug."""
    monkeypatch.setenv("HF_TOKEN", CANARY)
    monkeypatch.setattr(logging.getLogger(), "level", logging.DEBUG)
    with pytest.raises(Exit) as exited, reported():
        raise RuntimeError(f"request failed: headers={{'authorization': 'Bearer {CANARY}'}}")
    err = capsys.readouterr().err
    assert exited.value.code == 70
    assert "Traceback (most recent call last)" in err and "Bearer hf_***" in err
    assert CANARY not in err
