"""Bad input: each gets one line naming the env, file or flag and what to do, the exit code of
README.md's table, no traceback, and a checkout that is byte-identical afterwards.

Flags and whole-run failures go through the console script; one env failing among others goes
through the library, where the others must still stage or deploy.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from openenv_release.cli import program
from releaselib.config import ReleaseConfig
from releaselib.errors import StageError
from releaselib.hookspecs import hookimpl
from releaselib.hub import client as hub_module
from releaselib.hub.client import Hub
from releaselib.hub.deploy import canonical_fence, deploy_all
from releaselib.hub.retry import RetryPolicy
from releaselib.localhub import Fault, LocalHub, Scenario, SpaceBehaviour
from releaselib.plugins import PluginRegistry
from releaselib.records import Check, EnvProfile, Fix, StagedSpace
from releaselib.stage import stage_env
from releaselib.stage.discover import discover_envs, select_envs
from releaselib.stage.stage_env import MAX_FILE_BYTES, stage_envs
from tests.corpus import tree_digest
from tests.helpers import (
    TEST_SHA,
    builtin_registry,
    make_env,
    offline,
    openenv_root,
    release_config,
    task,
    user_cli,
    write,
)

HTML = "<html><head><title>Sign in</title></head><body>Please sign in</body></html>"
FAST = RetryPolicy(attempts=2, base=0.01, cap=0.01)

Setup = Callable[[Path, Path], object]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """An OpenEnv-shaped checkout with two healthy envs, a_env and b_env."""
    repo = openenv_root(tmp_path / "OpenEnv")
    make_env(repo, "a_env")
    make_env(repo, "b_env")
    return repo


def run(checkout: Path, tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The console script's program, in this process (``task``), with ``--repo`` and
    ``--staging-dir`` unless given; the checkout must come out byte-identical."""
    return run_with(task, checkout, tmp_path, *args, **env)


def run_with(
    runner: Callable[..., subprocess.CompletedProcess[str]], checkout: Path, tmp_path: Path, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    before = tree_digest(checkout)
    defaults = [] if "--repo" in args else ["--repo", str(checkout)]
    if "--staging-dir" not in args:
        defaults += ["--staging-dir", str(tmp_path / "staging")]
    result = runner(*args, *defaults, **env)
    assert tree_digest(checkout) == before, "the checkout changed"
    return result


def assert_one_line(result: subprocess.CompletedProcess[str], code: int, *fragments: str) -> None:
    """Exit ``code``, no traceback, and one ``error:`` line holding every fragment."""
    output = result.stdout + result.stderr
    assert result.returncode == code, output
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if line.startswith("error:")]
    assert any(all(f in line for f in fragments) for line in lines), output


def entry_point_plugins(folder: Path, **modules: str) -> dict[str, str]:
    """Install each ``name=source`` as an outside plugin (entry point group openenv_release);
    return the environment that makes the console script see them."""
    info = folder / "bad_plugins-1.0.dist-info"
    write(info / "METADATA", "Metadata-Version: 2.1\nName: bad-plugins\nVersion: 1.0\n")
    points = "".join(f"{name} = {name}\n" for name in modules)
    write(info / "entry_points.txt", f"[openenv_release]\n{points}")
    for name, source in modules.items():
        write(folder / f"{name}.py", source)
    return {"PYTHONPATH": str(folder)}


CLAIM_A_ENV = """\
from releaselib.hookspecs import hookimpl
from releaselib.records import EnvProfile

@hookimpl
def openenv_release_envs():
    return [EnvProfile("a_env")]
"""
RAISES_IN_ENVS = """\
from releaselib.hookspecs import hookimpl

@hookimpl
def openenv_release_envs():
    raise RuntimeError("profiles unavailable")
"""


def ledger_of(namespace: str) -> str:
    release = {"namespace": namespace, "version": "0.2.2", "suffix": "-0.2.2"}
    return json.dumps({"schema": 1, "release": release, "envs": {}})


def nothing(repo: Path, tmp: Path) -> None:
    return None


def empty_envs(repo: Path, tmp: Path) -> None:
    for env in (repo / "envs").iterdir():
        shutil.rmtree(env)


# (setup, args, exit code, fragments of the error line)
CLI_CASES = [
    pytest.param(nothing, ["stage", "--env", "../x"], 2, ["--env '../x' is not a valid env name", "name a directory under envs/"], id="env-dot-dot"),
    pytest.param(nothing, ["verify", "--env", "../x"], 2, ["--env '../x' is not a valid env name"], id="verify-env-dot-dot"),
    pytest.param(nothing, ["verify", "--probe-jobs", "0"], 2, ["--probe-jobs '0' must be a whole number, at least 1"], id="probe-jobs-0"),
    pytest.param(nothing, ["stage", "--env", "a;rm -rf /"], 2, ["--env 'a;rm -rf /' is not a valid env name"], id="env-shell-metacharacters"),
    pytest.param(lambda r, t: shutil.copytree(r / "envs" / "a_env", r / "envs" / "a b"), ["stage", "--env", "a b"], 2, ["--env 'a b' is not a valid env name"], id="env-dir-with-a-space"),
    pytest.param(nothing, ["stage", "--version", "1.0 beta"], 2, ["--version '1.0 beta' is not a version", "use something like 0.2.2"], id="version-with-a-space"),
    pytest.param(nothing, ["stage", "--version", "1.0;id"], 2, ["--version '1.0;id' is not a version"], id="version-with-a-semicolon"),
    pytest.param(nothing, ["deploy", "--env", "a_env", "--repo-id", "a_env-0.2.2", "--dry-run"], 2, ["--repo-id 'a_env-0.2.2' is not owner/name", "e.g. --repo-id"], id="repo-id-without-a-slash"),
    pytest.param(nothing, ["stage", "--suffix", ""], 2, ["--suffix '': a candidate Space needs a non-empty suffix", "only promote", "--suffix -0.2.2"], id="suffix-empty-flag"),
    pytest.param(nothing, ["deploy", "--suffix", "-", "--dry-run"], 2, ["--suffix '-': a suffix starts with '-' and ends with a letter or digit"], id="suffix-bad-name"),
    pytest.param(nothing, ["deploy", "--suffix", "_env", "--dry-run"], 2, ["--suffix '_env': a suffix starts with '-'"], id="suffix-without-dash"),
    pytest.param(nothing, ["deploy", "--suffix", "  ", "--dry-run"], 2, ["--suffix '  ': a candidate Space needs a non-empty suffix"], id="suffix-blank-flag"),
    pytest.param(lambda r, t: {"OPENENV_RELEASE_SUFFIX": ""}, ["deploy", "--dry-run"], 2, ["OPENENV_RELEASE_SUFFIX='': a candidate Space needs a non-empty suffix"], id="suffix-empty-variable"),
    pytest.param(lambda r, t: {"OPENENV_RELEASE_SUFFIX": " "}, ["stage"], 2, ["OPENENV_RELEASE_SUFFIX=' ': a candidate Space needs a non-empty suffix"], id="suffix-blank-variable"),
    pytest.param(lambda r, t: write(t / "invoke.yaml", 'release:\n  suffix: ""\n'), ["-f", "{tmp}/invoke.yaml", "deploy", "--dry-run"], 2, ["invoke config release.suffix '': a candidate Space needs a non-empty suffix"], id="suffix-empty-config-file"),
    pytest.param(nothing, ["deploy", "--env", "a_env", "--repo-id", "openenv/a_env", "--dry-run"], 2, ["--repo-id openenv/a_env: openenv/a_env is a canonical Space", "only promote writes canonical Spaces"], id="repo-id-into-the-env-canonical"),
    pytest.param(nothing, ["deploy", "--env", "a_env", "--repo-id", "openenv/b_env"], 2, ["--repo-id openenv/b_env: openenv/b_env is a canonical Space", "run promote"], id="repo-id-into-another-env-canonical"),
    pytest.param(nothing, ["deploy", "--env", "a_env", "--repo-id", "openenv/sudoku"], 2, ["--repo-id openenv/sudoku: openenv/sudoku is a canonical Space", "promote"], id="repo-id-into-a-plugin-alias"),
    pytest.param(nothing, ["deploy", "--env", "a_env", "--repo-id", "openenv/repl", "--dry-run"], 2, ["--repo-id openenv/repl: openenv/repl is a canonical Space", "promote"], id="repo-id-into-repl"),
    pytest.param(nothing, ["stage", "--repo", "{repo}/pyproject.toml"], 2, ["--repo", "pyproject.toml: not an OpenEnv checkout", "point --repo at"], id="repo-is-a-file"),
    pytest.param(nothing, ["deploy", "--jobs", "0", "--dry-run"], 2, ["--jobs '0' must be a whole number, at least 1"], id="jobs-0"),
    pytest.param(nothing, ["deploy", "--jobs", "four", "--dry-run"], 2, ["--jobs 'four' must be a whole number"], id="jobs-not-a-number"),
    pytest.param(nothing, ["stage", "--jobs", "4"], 2, ["No idea what '--jobs' is", "--help <task>"], id="flag-the-task-lacks"),
    pytest.param(nothing, ["release", "--from", "build"], 2, ["--from 'build' is not a step", "use one of stage, deploy"], id="from-unknown-step"),
    pytest.param(nothing, ["stage", "--staging-dir", "{repo}/envs/a_env/staging"], 2, ["--staging-dir", "envs/a_env/staging: overlaps the checkout", "outside envs/ and src/"], id="staging-dir-inside-envs"),
    pytest.param(nothing, ["stage", "--staging-dir", "{repo}"], 2, ["--staging-dir", "overlaps the checkout"], id="staging-dir-is-the-checkout"),
    pytest.param(lambda r, t: write(r / "pyproject.toml", "[project\n"), ["stage", "--version", "0.2.2"], 2, ["pyproject.toml: not readable TOML", "fix the checkout's pyproject.toml"], id="root-pyproject-unparseable"),
    pytest.param(empty_envs, ["stage"], 2, ["no deployable env under envs/ (0 env dirs)", "envs"], id="empty-envs-dir"),
    pytest.param(lambda r, t: write(t / "ledger.json", "{not json"), ["status", "--ledger", "{tmp}/ledger.json"], 1, ["ledger.json: not a readable release ledger", "move it aside"], id="ledger-corrupt"),
    pytest.param(lambda r, t: write(t / "ledger.json", ledger_of("acme")), ["status", "--ledger", "{tmp}/ledger.json"], 1, ["ledger.json records release (namespace='acme'", "pass --ledger PATH"], id="ledger-of-another-release"),
    pytest.param(lambda r, t: write(r / "envs" / "a_env" / "README.md", b"\xff\xfe# A\n"), ["stage"], 1, ["a_env: README.md: not UTF-8 (byte 0)", "save the file as UTF-8"], id="non-utf8-readme-fails-only-its-env"),
    pytest.param(nothing, ["stage", "--version", "0.2.2+local"], 2, ["--version '0.2.2+local' has a local version label ('+local')", "e.g. --version 0.2.2"], id="version-with-a-local-label"),
    pytest.param(nothing, ["deploy", "--dry-run", "--suffix", "-" + "a" * 95], 2, ["a_env: its candidate Space name", "is 101 characters; the Hub allows 96", "at most 91 characters"], id="space-id-over-96-characters"),
    pytest.param(nothing, ["verify", "--wait", "nan"], 2, ["--wait 'nan' must be a positive, finite number of seconds", "e.g. --wait 600"], id="verify-wait-nan"),
    pytest.param(nothing, ["verify", "--timeout", "inf"], 2, ["--timeout 'inf' must be a positive, finite number of seconds"], id="verify-timeout-inf"),
    pytest.param(nothing, ["release", "--timeout", "nan"], 2, ["--timeout nan must be a positive, finite number of seconds", "e.g. --timeout 20"], id="release-timeout-nan"),
    pytest.param(nothing, ["release", "--wait", "inf"], 2, ["--wait inf must be a positive, finite number of seconds"], id="release-wait-inf"),
    pytest.param(lambda r, t: {"HF_HUB_OFFLINE": "1", "HF_TOKEN": "hf_" + "x" * 34}, ["deploy", "--env", "a_env"], 2, ["HF_HUB_OFFLINE is set", "unset HF_HUB_OFFLINE"], id="hf-hub-offline"),
    pytest.param(nothing, ["status", "--ledger", "{repo}/ledger.json"], 2, ["--ledger {repo}/ledger.json: inside the checkout", "only pin changes the checkout", "outside envs/ and src/"], id="ledger-in-the-checkout-root"),
    pytest.param(nothing, ["release", "--ledger", "{repo}/envs/a_env/ledger.json"], 2, ["--ledger {repo}/envs/a_env/ledger.json: inside the checkout"], id="ledger-inside-an-env-dir"),
    pytest.param(lambda r, t: entry_point_plugins(t / "plugins", claim_one=CLAIM_A_ENV, claim_two=CLAIM_A_ENV), ["stage"], 3, ["env a_env is claimed by two plugins: claim_one and claim_two", "disable one"], id="two-plugins-claim-one-env"),
    pytest.param(lambda r, t: entry_point_plugins(t / "plugins", raises=RAISES_IN_ENVS), ["stage"], 3, ["plugin raises raised in openenv_release_envs: RuntimeError: profiles unavailable", "OPENENV_RELEASE_DISABLE_PLUGINS=raises"], id="plugin-raises"),
]


#: cases read at start-up (a variable huggingface_hub reads at import, plugins found on
#: PYTHONPATH), and one plain case, through the console script in a subprocess
CONSOLE_SCRIPT = {"hf-hub-offline", "two-plugins-claim-one-env", "plugin-raises", "env-dot-dot"}


@pytest.mark.parametrize(("setup", "args", "code", "fragments"), CLI_CASES)
def test_bad_input_through_the_console_script(
    checkout: Path, tmp_path: Path, request: pytest.FixtureRequest, setup: Setup, args: list[str], code: int, fragments: list[str]
) -> None:
    env = setup(checkout, tmp_path)
    args = [a.format(repo=checkout, tmp=tmp_path) for a in args]
    runner = user_cli if request.node.callspec.id in CONSOLE_SCRIPT else task
    result = run_with(runner, checkout, tmp_path, *args, **(env if isinstance(env, dict) else {}))
    assert_one_line(result, code, *(f.format(repo=checkout) for f in fragments))


def test_a_hub_that_refuses_connections_is_one_line_naming_the_endpoint(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In-process, so the retries of a dropped connection need not wait."""
    monkeypatch.setattr(hub_module, "RetryPolicy", functools.partial(RetryPolicy, sleep=lambda _: None))
    monkeypatch.setenv("HF_TOKEN", "hf_" + "x" * 34)
    for key, value in offline(tmp_path).items():
        monkeypatch.setenv(key, value)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    before = tree_digest(checkout)
    argv = ["openenv-release", "deploy", "--repo", str(checkout), "--staging-dir", str(tmp_path / "s"), "--hub-endpoint", endpoint]
    with pytest.raises(SystemExit) as exited:
        program.run(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 1 and "Traceback" not in err
    assert f"error: token check at {endpoint}: cannot reach the Hub at {endpoint} (ConnectError); check --hub-endpoint" in err
    assert tree_digest(checkout) == before


@pytest.mark.parametrize(
    ("token", "code", "fragments"),
    [
        pytest.param("hf_rejectedrejectedrejectedrejected0", 4, ["the Hub rejected the token (401)", "set a valid HF_TOKEN"], id="token-the-hub-rejects"),
        pytest.param("", 4, ["no Hugging Face token", "set HF_TOKEN"], id="no-token"),
        pytest.param("hf_é_pasted_with_an_accent_0123456789", 4, ["holds a space, a control character or a non-ASCII character", "set it again"], id="token-with-a-non-ascii-character"),
    ],
)
def test_a_token_the_hub_cannot_take_stops_deploy_before_any_upload(
    checkout: Path, tmp_path: Path, localhub: LocalHub, token: str, code: int, fragments: list[str]
) -> None:
    result = run(checkout, tmp_path, "deploy", **{**localhub.client_env(), "HF_TOKEN": token})
    assert_one_line(result, code, *fragments)
    assert localhub.counters().commits == 0


def test_a_hub_answering_html_is_one_line_saying_so(checkout: Path, tmp_path: Path, localhub_factory: Callable[..., LocalHub]) -> None:
    local = localhub_factory(Scenario(faults=(Fault(endpoint="whoami", body=HTML, content_type="text/html"),)))
    result = run(checkout, tmp_path, "deploy", **local.client_env())
    assert_one_line(result, 1, "the Hub answered something that is not JSON (an HTML page?)", "--hub-endpoint or HF_ENDPOINT")


# One env failing among others, through the library.


def config_for(repo: Path, tmp_path: Path, **changes: object) -> ReleaseConfig:
    return release_config(repo, tmp_path / "staging", jobs=1).with_(**changes)


def registry(*plugins: object) -> PluginRegistry:
    return builtin_registry(*plugins)


def stage_all(checkout: Path, tmp_path: Path, *plugins: object) -> dict[str, StagedSpace]:
    before = tree_digest(checkout)
    staged = stage_envs(config_for(checkout, tmp_path), discover_envs(checkout), registry(*plugins))
    assert tree_digest(checkout) == before, "the checkout changed"
    return {s.env: s for s in staged}


def test_an_env_dir_with_a_space_is_listed_as_not_deployable_and_the_others_stage(checkout: Path, tmp_path: Path) -> None:
    shutil.copytree(checkout / "envs" / "a_env", checkout / "envs" / "a b")
    specs = {s.name: s for s in discover_envs(checkout)}
    assert not specs["a b"].deployable
    assert specs["a b"].reason.startswith("'a b' is not a valid env name") and "rename the directory" in specs["a b"].reason
    staged = stage_envs(config_for(checkout, tmp_path), select_envs(specs.values(), []), registry())
    assert [(s.env, s.ok) for s in staged] == [("a_env", True), ("b_env", True)]
    listed = user_cli("envs", "--json", "--repo", str(checkout))
    assert listed.returncode == 0, listed.stderr
    assert {e["env"]: e["deployable"] for e in json.loads(listed.stdout)} == {"a b": False, "a_env": True, "b_env": True}


def broken(rel: str, content: str | bytes) -> Setup:
    return lambda repo, tmp: write(repo / "envs" / "a_env" / rel, content)


def outside_link(repo: Path, tmp: Path) -> None:
    write(tmp / "outside.txt", "not in the checkout\n")
    (repo / "envs" / "a_env" / "data.txt").symlink_to(tmp / "outside.txt")


def huge_file(repo: Path, tmp: Path) -> None:
    write(repo / "envs" / "a_env" / "data" / "weights.bin", b"")
    with (repo / "envs" / "a_env" / "data" / "weights.bin").open("r+b") as f:
        f.truncate(MAX_FILE_BYTES + 1_000_000)  # sparse: fast to make and to copy


ENV_CASES = [
    pytest.param(broken("pyproject.toml", "[project\nname = 'x'\n"), ["pyproject.toml:1: not valid TOML", "fix the file in the checkout"], id="pyproject-unparseable"),
    pytest.param(broken("pyproject.toml", '[project]\nname = "x"\ndependencies = [1]\n'), ["pyproject.toml: project.dependencies must be a list of requirement strings"], id="pyproject-dependency-not-a-string"),
    pytest.param(broken("pyproject.toml", 'project = "x"\n'), ["pyproject.toml: project is not a table"], id="pyproject-project-not-a-table"),
    pytest.param(broken("server/Dockerfile", "RUN pip install x\nCMD [\"x\"]\n"), ["envs/a_env/server/Dockerfile:1: RUN before the first FROM", "fix the Dockerfile"], id="dockerfile-without-from"),
    pytest.param(broken("server/Dockerfile", "FROM python:3.11\nFOO bar\nCMD [\"x\"]\n"), ["envs/a_env/server/Dockerfile:2: unknown instruction FOO"], id="dockerfile-unknown-instruction"),
    pytest.param(broken("server/Dockerfile", b"FROM python:3.11\n# caf\xe9\n"), ["server/Dockerfile: not UTF-8 (byte 22)", "save the file as UTF-8"], id="dockerfile-not-utf8"),
    pytest.param(broken("requirements.txt", b"openenv-core\xff\n"), ["envs/a_env/requirements.txt: not UTF-8"], id="requirements-not-utf8"),
    pytest.param(broken("README.md", "---\ntitle: A\nsdk: docker\n# A\n"), ["README.md:1: front matter is not terminated", "fix the README front matter"], id="readme-unterminated-front-matter"),
    pytest.param(broken("README.md", "---\n- a\n- b\n---\n# A\n"), ["README.md:2: front matter is not a YAML mapping"], id="readme-front-matter-is-a-list"),
    pytest.param(broken("openenv.yaml", "name: a_env\nport: eighty\n"), ["openenv.yaml: port must be an integer 1-65535, got 'eighty'", "fix openenv.yaml"], id="openenv-yaml-bad-port"),
    pytest.param(broken("openenv.yaml", "name: [a_env\n"), ["openenv.yaml:2: not valid YAML"], id="openenv-yaml-unparseable"),
    pytest.param(outside_link, ["data.txt: symlink points outside the checkout", "replace it with a real file"], id="symlink-leaving-the-checkout"),
    pytest.param(huge_file, ["a_env: envs/a_env/data/weights.bin is 51.0 MB, over the 50 MB limit for a staged file (not scanned for secrets)", "plugin fix", "check it for secrets, then host it in a Hub dataset"], id="huge-file"),
]


@pytest.mark.parametrize(("setup", "fragments"), ENV_CASES)
def test_one_bad_env_fails_alone(checkout: Path, tmp_path: Path, setup: Setup, fragments: list[str]) -> None:
    setup(checkout, tmp_path)
    staged = stage_all(checkout, tmp_path)
    assert staged["b_env"].ok and staged["b_env"].files > 0
    bad = staged["a_env"]
    assert not bad.ok and bad.error is not None and bad.error.startswith("a_env: ")
    assert "\n" not in bad.error and all(f in bad.error for f in fragments), bad.error
    assert not bad.staged_dir.exists()


LFS_POINTER = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 1234\n"


def test_an_lfs_pointer_fails_its_env_with_the_lfs_remedy(checkout: Path, tmp_path: Path) -> None:
    write(checkout / "envs" / "a_env" / "data" / "model.bin", LFS_POINTER)
    staged = stage_all(checkout, tmp_path)
    assert staged["b_env"].ok
    error = staged["a_env"].error or ""
    assert not staged["a_env"].ok and "\n" not in error, error
    assert "envs/a_env/data/model.bin:1: is a Git LFS pointer, not the file it points to (lfs-pointer)" in error
    assert "run `git lfs pull` in the checkout" in error
    assert error.count("is a Git LFS pointer") == 1, error  # staged twice, named once


class AEnvFix:
    """A plugin that claims a_env and gives it one fix, ``apply``."""

    def __init__(self, name: str, apply: Callable[[Path], str]) -> None:
        self.name, self.apply = name, apply

    @hookimpl
    def openenv_release_envs(self) -> list[EnvProfile]:
        return [EnvProfile("a_env")]

    @hookimpl
    def openenv_release_fixes(self, env: str) -> list[Fix]:
        return [Fix(self.name, "test", self.apply)] if env == "a_env" else []


def explode(tree: Path) -> str:
    raise KeyError("no such file in the plugin's table")


def drop_weights(tree: Path) -> str:
    """The remedy the size error gives: a fix that drops the big file (both staged copies)."""
    for staged in (tree / "data" / "weights.bin", tree / "envs" / "a_env" / "data" / "weights.bin"):
        staged.unlink()
    return "dropped"


class RaisingCheck:
    @hookimpl
    def openenv_release_checks(self) -> list[Check]:
        def explode(tree: Path) -> list[object]:
            if (tree / "envs" / "a_env").is_dir():
                raise ZeroDivisionError("division by zero")
            return []

        return [Check("explode-check", "test", explode)]


def test_a_file_over_the_limit_in_src_fails_every_env_naming_src(checkout: Path, tmp_path: Path) -> None:
    with (checkout / "src" / "model.bin").open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)
    staged = stage_all(checkout, tmp_path)
    for env in ("a_env", "b_env"):
        error = staged[env].error or ""
        assert "src/model.bin is 50.0 MB" in error and "take it out of src/ in the checkout (every env stages src/)" in error, error


def test_check_sizes_names_a_big_env_file_once_and_still_sees_a_big_root_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stage_env, "MAX_FILE_BYTES", 10)
    write(tmp_path / "envs" / "a_env" / "w.bin", b"x" * 11)
    write(tmp_path / "w.bin", b"x" * 11)
    write(tmp_path / "envs" / "notes.txt", b"small")  # an env's own envs/ folder, at the root
    with pytest.raises(StageError, match=r"^envs/a_env/w.bin is 0.0 MB, over"):
        stage_env.check_sizes(tmp_path)
    write(tmp_path / "envs" / "a_env" / "w.bin", b"small")  # a fix made one copy small, not the other
    with pytest.raises(StageError, match=r"^w.bin is 0.0 MB, over"):
        stage_env.check_sizes(tmp_path)


@pytest.mark.parametrize("drop", [True, False], ids=["dropped", "left"])
def test_a_file_over_the_limit_stages_once_a_plugin_fix_drops_it(checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, drop: bool) -> None:
    """An env with a fix is scanned whole, as before (a fix may move or split the file), so the
    limit is made small here: the 51 MB file takes 20 s to scan."""
    monkeypatch.setattr(stage_env, "MAX_FILE_BYTES", 1000)
    write(checkout / "envs" / "a_env" / "data" / "weights.bin", b"w" * 2000)
    staged = stage_all(checkout, tmp_path, AEnvFix("weights", drop_weights if drop else lambda tree: "left"))["a_env"]
    if drop:
        assert staged.ok and [f.name for f in staged.fixes] == ["weights"], staged.error
        assert not [rel for rel in staged.manifest if rel.endswith("weights.bin")]
    else:  # named once, by its checkout path: the root copy is the same file
        assert not staged.ok and "a_env: envs/a_env/data/weights.bin is 0.0 MB, over the" in (staged.error or ""), staged.error


@pytest.mark.parametrize(
    ("plugin", "fragment"),
    [
        (AEnvFix("explode", explode), "fix explode of plugin"),
        (RaisingCheck(), "check explode-check of plugin"),
    ],
    ids=["fix", "check"],
)
def test_a_plugin_that_raises_fails_only_its_env(checkout: Path, tmp_path: Path, plugin: object, fragment: str) -> None:
    staged = stage_all(checkout, tmp_path, plugin)
    assert staged["b_env"].ok
    error = staged["a_env"].error or ""
    assert fragment in error and "failed: " in error and "OPENENV_RELEASE_DISABLE_PLUGINS" in error, error


def test_crlf_files_stage_like_lf_files(checkout: Path, tmp_path: Path) -> None:
    env = checkout / "envs" / "a_env"
    for rel in ("server/Dockerfile", "pyproject.toml", "README.md"):
        (env / rel).write_bytes((env / rel).read_bytes().replace(b"\n", b"\r\n"))
    write(env / "openenv.yaml", b"name: a_env\r\nport: 8000\r\n")
    write(env / "requirements.txt", b"openenv-core>=0.2\r\n")
    staged = stage_all(checkout, tmp_path)
    a = staged["a_env"]
    assert a.ok, a.error
    assert {c.file for c in a.changes} >= {"pyproject.toml", "Dockerfile", "README.md", "envs/a_env/requirements.txt"}
    pin = f"openenv-core[core] @ git+https://github.com/huggingface/OpenEnv.git@{TEST_SHA}".encode()
    assert pin + b"\r\n" in (a.staged_dir / "requirements.txt").read_bytes()
    assert b"FROM ghcr.io/huggingface/openenv-base:latest\r\n" in (a.staged_dir / "Dockerfile").read_bytes()
    assert "app_port: 8000" in (a.staged_dir / "README.md").read_text()


@pytest.mark.parametrize(
    ("fault", "fragment"),
    [
        pytest.param(Fault(endpoint="create_repo", status=402, count=1), "openenv/a_env-0.2.2: 402 Payment Required", id="402-on-create"),
        pytest.param(Fault(endpoint="create_repo", body=HTML, count=1), "openenv/a_env-0.2.2: the Hub answered something that is not JSON", id="html-on-create"),
        pytest.param(Fault(endpoint="commit", body=HTML, count=1), "openenv/a_env-0.2.2: the Hub answered something that is not JSON", id="html-on-commit"),
    ],
)
def test_a_hub_failure_for_one_env_leaves_the_others_deployed(
    checkout: Path, tmp_path: Path, localhub_factory: Callable[..., LocalHub], fault: Fault, fragment: str
) -> None:
    no_runs = SpaceBehaviour(build_error="not built in this test")  # no Space process starts
    local = localhub_factory(Scenario(faults=(fault,), spaces=(no_runs,)))
    config = config_for(checkout, tmp_path, hub_endpoint=local.endpoint)
    hub = Hub.connect(local.endpoint, token=local.token, policy=FAST)
    staged = stage_envs(config, discover_envs(checkout), registry())
    deployed = {d.staged.env: d for d in deploy_all(hub, config, staged, fence=canonical_fence(config, registry()))}
    assert deployed["b_env"].ok and deployed["b_env"].commit
    error = deployed["a_env"].error or ""
    assert error.startswith("a_env: ") and fragment in error, error


TOKEN = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG"


@pytest.mark.parametrize(
    ("args", "env", "flag"),
    [
        (["stage", "--namespace", TOKEN], {}, "--namespace"),
        (["stage"], {"OPENENV_RELEASE_NAMESPACE": TOKEN}, "--namespace"),
        (["stage", "--suffix", f"-{TOKEN}"], {}, "--suffix"),
        (["stage", "--version", f"0.2.2+{TOKEN}"], {}, "--version"),
        (["collection", "--dry-run", "--collection-namespace", TOKEN], {}, "--collection-namespace"),
        (["stage"], {"OPENENV_RELEASE_HUB_TAG": TOKEN}, "--hub-tag"),
        (["stage", "--staging-dir", "{tmp}/" + TOKEN], {}, "--staging-dir"),
        (["status", "--ledger", "{tmp}/" + TOKEN + ".json"], {}, "--ledger"),
        (["deploy", "--env", "a_env", "--repo-id", f"openenv/{TOKEN}", "--dry-run"], {}, "--repo-id"),
    ],
)
def test_a_token_shaped_flag_value_is_refused_and_never_echoed(
    checkout: Path, tmp_path: Path, args: list[str], env: dict[str, str], flag: str
) -> None:
    result = run(checkout, tmp_path, *(a.format(tmp=tmp_path) for a in args), **env)
    assert_one_line(result, 2, f"{flag}: the value looks like a token")
    assert TOKEN not in result.stdout + result.stderr
    assert not (tmp_path / TOKEN).exists() and not (tmp_path / "staging").exists()


def test_release_from_a_step_on_a_fresh_staging_dir_creates_nothing(checkout: Path, tmp_path: Path) -> None:
    result = run(checkout, tmp_path, "release", "--from", "verify")
    assert_one_line(result, 2, "nothing to redo: the ledger has no verify records", "run release without --from")
    assert not (tmp_path / "staging").exists()


def test_a_trailing_slash_on_the_hub_endpoint_reaches_the_same_hub(checkout: Path, tmp_path: Path, localhub: LocalHub) -> None:
    env = {k: v for k, v in localhub.client_env().items() if k != "HF_ENDPOINT"}
    result = run(checkout, tmp_path, "deploy", "--env", "a_env", "--hub-endpoint", localhub.endpoint + "/", **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert localhub.counters().commits == 1


FULL_DISK = """
import resource, sys
from pathlib import Path
from releaselib.errors import LedgerError
from releaselib.ledger.ledger import Ledger

book = Ledger.load(Path(sys.argv[1]), {"namespace": "openenv", "version": "0.2.2", "suffix": "-0.2.2"})
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # writes past 4 KiB fail as on a full disk
try:
    book.record("a_env", "stage", manifest_hash="h", notes="x" * 8192)
except LedgerError as exc:
    print(exc.one_line())
"""


def test_a_full_disk_under_the_ledger_is_one_line_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "full" / "ledger.json"
    result = subprocess.run([sys.executable, "-c", FULL_DISK, str(path)], capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert f"{path}: cannot write the ledger (File too large)" in result.stdout
    assert "then rerun" in result.stdout
    assert json.loads(path.read_text())["envs"] == {}  # the file holds what it held before
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []
