"""The credentials env authors actually hold fail staging, by content: each env of a git checkout
carries one kind, and each fails naming the file, the line and the kind, never the value
(issue 24). ``--allow-secret`` is the one way through."""

from __future__ import annotations

import base64
import random
import string
from pathlib import Path

import pytest

from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.records import StagedSpace
from releaselib.stage.discover import discover_envs
from releaselib.stage.secret_gate import allow_flags
from releaselib.stage.secretscan import Scanner
from releaselib.stage.stage_env import StageRun, stage_envs
from tests.corpus import snapshot_or_skip
from tests.test_bad_input import config_for
from tests.test_stage import make_env, write
from tests.test_stage_fences import git

RNG = random.Random(24)


def made_up(alphabet: str, n: int) -> str:
    return "".join(RNG.choices(alphabet, k=n))


ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
HF = "hf_" + made_up(string.ascii_letters, 34)
#: env -> (file in the env, its content, the line of the secret, the kind, the secret value)
KINDS: dict[str, tuple[str, str, int, str, str]] = {}


def kind(env: str, path: str, before: str, value: str, after: str, name: str) -> None:
    text = f"{before}{value}{after}\n"
    KINDS[env] = (path, text, text[: text.index(value)].count("\n") + 1, name, value)


kind(
    "anthropic_env", "config.py", "import os\n\nANTHROPIC_API_KEY = \"",
    "sk-ant-api03-" + made_up(ALNUM, 93) + "AA", '"', "betterleaks.anthropic-api-key",
)
kind(
    "google_env", "config.py", 'GOOGLE_API_KEY = "', "AIza" + made_up(ALNUM, 35), '"',
    "betterleaks.gcp-api-key",
)
kind(
    "tavily_env", "config.py", 'TAVILY_API_KEY = "', "tvly-dev-" + made_up(ALNUM, 32), '"',
    "Tavily API key",
)
kind(
    "wandb_env", "config.py", 'WANDB_API_KEY = "', made_up(HEX, 40), '"',
    "betterleaks.weights-and-biases-api-key",
)
kind(
    "openai_env", "llm.py", 'client = OpenAI(api_key="',
    "sk-proj-" + made_up(ALNUM, 74) + "T3BlbkFJ" + made_up(ALNUM, 74), '")', "OpenAI Token",
)
kind(
    "kaggle_env", "kaggle.json", '{"username": "alice", "key": "', made_up(HEX, 32), '"}',
    "Kaggle API key",
)
kind(
    "docker_env", ".docker/config.json", '{\n  "auths": {\n    "ghcr.io": {"auth": "',
    base64.b64encode(f"alice:{made_up(ALNUM, 20)}".encode()).decode(), '"}\n  }\n}',
    "Docker registry auth",
)
kind(
    "netrc_env", "server/setup.sh", "#!/bin/sh\necho 'machine pypi.example.org login alice password ",
    made_up(ALNUM, 16), "' > ~/.netrc", "netrc password",
)
kind(
    "aws_env", "server/aws.cfg", "[default]\naws_access_key_id = ", "AKIA" + made_up(HEX.upper(), 16),
    "", "AWS Access Key",
)
kind(
    "gitlab_env", "ci.env", "GITLAB_TOKEN=", "glpat-" + made_up(ALNUM, 20), "", "GitLab Token",
)
kind(
    "base64_env", "server/auth.py", 'TOKEN = base64.b64decode("',
    base64.b64encode(HF.encode()).decode(), '").decode()', "Hugging Face token (base64-encoded)",
)

# Over several lines (issue 26): a token split by a line continuation, a .netrc entry a line
# per field. The value is the whole secret, which no single line holds.
SPLIT_HF = "hf_" + made_up(ALNUM, 34)
KINDS["split_env"] = (
    "server/Dockerfile",
    f"FROM python:3.11-slim\nENV HF_TOKEN={SPLIT_HF[:12]}\\\n{SPLIT_HF[12:]}\nCMD [\"x\"]\n",
    2, "Hugging Face token", SPLIT_HF,
)
NETRC_PASSWORD = made_up(ALNUM, 12)
KINDS["netrc_lines_env"] = (
    "server/Dockerfile.netrc",  # a .netrc is never staged; a copy by another name is
    f"machine pypi.example.org\nlogin alice\npassword {NETRC_PASSWORD}\n",
    3, "netrc password", NETRC_PASSWORD,
)


def stage(repo: Path, tmp_path: Path, run: StageRun | None = None) -> dict[str, StagedSpace]:
    registry = PluginRegistry(get_plugin_manager(entry_points=False))
    config = config_for(repo, tmp_path)
    return {s.env: s for s in stage_envs(config, discover_envs(repo), registry, run)}


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("kinds") / "OpenEnv"
    write(repo / "pyproject.toml", '[project]\nname = "openenv"\nversion = "0.2.2"\n')
    write(repo / "src" / "openenv" / "core" / "__init__.py", "")
    make_env(repo, "clean_env")
    for env, (path, text, *_) in KINDS.items():
        make_env(repo, env, **{path: text})
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    return repo


def test_each_kind_fails_its_env_naming_file_line_and_kind_never_the_value(
    checkout: Path, tmp_path: Path
) -> None:
    staged = stage(checkout, tmp_path)
    assert staged["clean_env"].ok, staged["clean_env"].error
    for env, (path, _, line, name, value) in KINDS.items():
        result = staged[env]
        assert not result.ok, env
        assert result.error is not None
        assert result.error.startswith(f"{env}: envs/{env}/{path}:{line}: {name};"), result.error
        assert value not in result.error and value[8:24] not in result.error, env
    tree = b"".join(p.read_bytes() for p in (tmp_path / "staging").rglob("*") if p.is_file())
    assert not [env for env, (*_, value) in KINDS.items() if value.encode() in tree]


def test_allow_secret_lets_one_through(checkout: Path, tmp_path: Path) -> None:
    path = f"envs/kaggle_env/{KINDS['kaggle_env'][0]}"
    staged = stage(checkout, tmp_path, StageRun(allow_flags([path], checkout)))
    assert staged["kaggle_env"].ok and not staged["tavily_env"].ok
    assert [str(f) for f in staged["kaggle_env"].allowed_secrets] == [f"{path}:1: Kaggle API key"]


def test_the_snapshot_corpus_holds_only_the_placeholder_its_plugin_allows() -> None:
    """False positives on the 34 real envs: the one finding is git_env's README logging in to
    its local Gitea with the documented default, which env_plugins/git_env.py allows."""
    root = snapshot_or_skip()
    files = [(p.relative_to(root).as_posix(), p) for p in sorted(root.rglob("*")) if p.is_file()]
    found = Scanner().scan(files)
    assert [str(f) for f in found] == ["envs/git_env/README.md:212: betterleaks.curl-auth-user"]
    (allowed,) = PluginRegistry(get_plugin_manager(entry_points=False)).allowed_secrets("git_env")
    assert (allowed.record.path, allowed.record.kind, allowed.record.sha256) == (
        found[0].path,
        found[0].kind,
        found[0].sha256,
    )
