"""A 5-env release on the embedded Hub, for the promote, collection, pin and cleanup tests.

Candidates are staged from a small OpenEnv-shaped checkout and deployed for real; their
Dockerfile's command exits at once (the runtime does not matter here), so no server is kept
running. Canonical Spaces exist as public Spaces holding an older release.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import CommitOperationAdd, HfApi

from releaselib.config import ReleaseConfig
from releaselib.hub.client import Hub
from releaselib.hub.deploy import canonical_fence, deploy_all
from releaselib.hub.retry import RetryPolicy
from releaselib.localhub import LocalHub
from releaselib.plugins import PluginRegistry
from releaselib.records import Verdict
from releaselib.stage.discover import discover_envs
from releaselib.stage.stage_env import stage_envs
from tests.helpers import builtin_registry, release_config

GOLDEN = Path(__file__).parent / "golden" / "promote"
FAST = RetryPolicy(attempts=4, base=0.01, cap=0.05)
DOCKERFILE = 'FROM python:3.11-slim\nWORKDIR /app\nCOPY . /app\nCMD ["python", "-c", "pass"]\n'
PYPROJECT = '[project]\nname = "{env}"\nversion = "0.1.0"\ndependencies = [\n    "openenv[core]{spec}",\n]\n'
#: env -> (verdict outcome, its OpenEnv requirement spec in the checkout)
OUTCOMES = {
    "echo_env": ("PASS", ">=0.2.0"),
    "repl_env": ("PASS", ">=0.2.0,<0.2.1"),  # pinned by an earlier release
    "textarena_env": ("PASS", ">=0.2.0"),
    "broken_env": ("FAIL", None),  # its pyproject is the golden input
    "slow_env": ("INCONCLUSIVE", ">=0.2.0"),
}
REASONS = {"FAIL": "POST /reset answered 500", "INCONCLUSIVE": "POST /reset timed out after 20s"}
#: canonical Spaces that exist before the release (repl_env is a decoy: repl_env's canonical
#: is openenv/repl, and openenv/textarena_env must never be touched either)
CANONICALS = (
    "openenv/echo_env", "openenv/repl", "openenv/repl_env", "openenv/sudoku", "openenv/wordle",
    "openenv/textarena_env", "openenv/broken_env", "openenv/slow_env",
)


@dataclass
class Release:
    local: LocalHub
    hub: Hub
    api: HfApi
    config: ReleaseConfig
    registry: PluginRegistry
    verdicts: dict[str, Verdict]

    def candidate(self, env: str) -> str:
        return self.config.space_id(env)

    def tree(self, space_id: str) -> dict[str, bytes]:
        """Every file of a Space at its head, by path."""
        files = self.api.list_repo_files(space_id, repo_type="space")
        return {p: Path(self.api.hf_hub_download(space_id, p, repo_type="space", cache_dir=self.config.staging_dir / "dl")).read_bytes() for p in files}

    def head(self, space_id: str) -> str | None:
        return self.api.space_info(space_id).sha


def write_checkout(root: Path, envs: dict[str, tuple[str, str | None]]) -> Path:
    (root / "envs").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "openenv"\nversion = "0.2.2"\n')
    for env, (_, spec) in envs.items():
        folder = root / "envs" / env
        (folder / "server").mkdir(parents=True)
        (folder / "server" / "Dockerfile").write_text(DOCKERFILE)
        (folder / "README.md").write_text(f"---\ntitle: {env}\ncolorFrom: blue\n---\n\n# {env}\n\nPlays {env}.\n")
        pyproject = PYPROJECT.format(env=env, spec=spec) if spec else (GOLDEN / f"{env}.pyproject.toml").read_text()
        (folder / "pyproject.toml").write_text(pyproject)
    return root


def make_release(local: LocalHub, tmp_path: Path, envs: dict[str, tuple[str, str | None]] = OUTCOMES, *, canonicals: tuple[str, ...] = CANONICALS) -> Release:
    """Stage and deploy ``envs`` as candidates, create the canonical Spaces, record verdicts."""
    checkout = write_checkout(tmp_path / "OpenEnv", envs)
    config = release_config(checkout, tmp_path / "staging", ref="main", dist="openenv", hub_endpoint=local.endpoint)
    registry = builtin_registry()
    hub = Hub.connect(local.endpoint, token=local.token, policy=FAST)
    staged = stage_envs(config, discover_envs(checkout), registry)
    deployed = deploy_all(hub, config, staged, fence=canonical_fence(config, registry))
    assert all(d.ok and d.commit for d in deployed), [d.error for d in deployed]
    api = HfApi(endpoint=local.endpoint, token=local.token)
    for space_id in canonicals:
        api.create_repo(space_id, repo_type="space", space_sdk="docker", private=False)
        old = [CommitOperationAdd("README.md", b"---\ntitle: old\n---\n# 0.2.1\n"), CommitOperationAdd("old.txt", b"0.2.1\n")]
        api.create_commit(space_id, old, commit_message="0.2.1", repo_type="space")
    if "openenv/wordle" in canonicals:  # already right: promote must not set it again
        api.add_space_variable("openenv/wordle", "TEXTARENA_ENV_ID", "Wordle-v0")
    verdicts = {
        d.staged.env: Verdict(d.staged.env, d.space_id, envs[d.staged.env][0], d.commit, REASONS.get(envs[d.staged.env][0], ""))
        for d in deployed
    }
    local.reset_counters()
    return Release(local, hub, api, config, registry, verdicts)


def writes(local: LocalHub) -> Counter[str]:
    """Requests that could change anything on the Hub, by endpoint."""
    return Counter(r.endpoint or r.path for r in local.requests() if r.method not in ("GET", "HEAD"))
