"""The ``venv`` builder serves an OpenEnv git requirement from the ``--openenv`` checkout at the
commit it pins, whatever that checkout's HEAD is now; without the checkout or the commit the
build ends as the builder's own BUILD_ERROR, which verify calls INCONCLUSIVE, naming
``--openenv`` (never a PASS on the registry's OpenEnv)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from releaselib.hub.runtime import BUILDER_MADE, SpaceState
from releaselib.space_runtime.builders import VenvBuilder
from releaselib.space_runtime.installs import Install
from releaselib.space_runtime.plan import BuildError
from releaselib.verify.candidates import ProbePlan, _not_probed
from releaselib.verify.probe import Outcome

GIT = "git+https://github.com/huggingface/OpenEnv.git@"


def git(*args: str, cwd: Path) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def commit_version(repo: Path, version: str) -> str:
    (repo / "pyproject.toml").write_text(
        f'[project]\nname = "openenv"\nversion = "{version}"\n\n[tool.setuptools]\npy-modules = []\n'
    )
    git("add", ".", cwd=repo)
    git("commit", "-qm", version, cwd=repo)
    return git("rev-parse", "HEAD", cwd=repo)


@pytest.fixture(scope="module")
def moved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """An OpenEnv checkout whose ``main`` moved on: (checkout, the pinned sha, HEAD's sha)."""
    repo = tmp_path_factory.mktemp("OpenEnv")
    git("init", "-q", "-b", "main", cwd=repo)
    return repo, commit_version(repo, "0.2.2"), commit_version(repo, "0.2.3")


def overrides(builder: VenvBuilder, log: Path, *requirements: str) -> list[str]:
    install = Install(1, "pip", ("-r", "requirements.txt"), requirements, "pip install")
    with open(log, "w") as out:
        return builder._overrides([install], out, deadline=float("inf"))


def test_the_wheel_is_built_at_the_pinned_commit_not_the_checkout_head(
    moved: tuple[Path, str, str], tmp_path: Path
) -> None:
    checkout, pinned, head = moved
    builder = VenvBuilder(tmp_path / "work", openenv=checkout)
    (line,) = overrides(builder, tmp_path / "log", f"openenv[core] @ {GIT}{pinned}")
    assert line.startswith("openenv[core] @ file://") and "openenv-0.2.2-" in line
    assert git("rev-parse", "HEAD", cwd=checkout) == head and not git("status", "--porcelain", cwd=checkout)


@pytest.mark.parametrize(
    ("openenv", "pin", "said"),
    [
        (False, "PINNED", "no OpenEnv checkout to build"),
        (True, "0" * 40, "has no commit 0000000000"),
        (True, "", "not one commit"),
    ],
)
def test_no_checkout_or_commit_to_build_is_the_builders_own_error(
    moved: tuple[Path, str, str], tmp_path: Path, openenv: bool, pin: str, said: str
) -> None:
    checkout, pinned, _ = moved
    builder = VenvBuilder(tmp_path / "work", openenv=checkout if openenv else None)
    requirement = f"openenv[core] @ {GIT}{pin.replace('PINNED', pinned)}".rstrip("@")
    with pytest.raises(BuildError) as failed:
        overrides(builder, tmp_path / "log", requirement)
    last = failed.value.message.splitlines()[-1]
    assert last.startswith(BUILDER_MADE) and said in last


def test_verify_calls_a_builder_made_build_error_inconclusive_naming_openenv() -> None:
    said = "no OpenEnv checkout to build abc from: start the embedded Hub with --openenv CHECKOUT"
    error = f"--> line 3: pip install\n{BUILDER_MADE} {said}"
    state = SpaceState("openenv/echo_env-0.2.2", "BUILD_ERROR", "s", error, builder="venv")
    result = _not_probed(state, ProbePlan("echo_env", 5.0))
    assert result.outcome is Outcome.INCONCLUSIVE and said in result.reason
    assert result.reason.endswith("the embedded Hub's builder could not build it, not the Space's own failure")
    skipped = f"{BUILDER_MADE} line 31 needs a host beyond the package registries"
    other = SpaceState("openenv/echo_env-0.2.2", "BUILD_ERROR", "s", skipped, builder="venv")
    assert "--openenv" not in _not_probed(other, ProbePlan("echo_env", 5.0)).reason  # its own remedy
    real = SpaceState("openenv/echo_env-0.2.2", "BUILD_ERROR", "s", error, builder=None)
    assert _not_probed(real, ProbePlan("echo_env", 5.0)).outcome is Outcome.FAIL  # a real Hub's


def test_a_tracked_link_out_of_the_checkout_is_left_out_of_the_build(tmp_path: Path) -> None:
    """tarfile's data filter refuses it; the build goes on without it (it points at nothing
    the commit holds) instead of ending the build thread."""
    repo = tmp_path / "OpenEnv"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / "secret.txt").symlink_to(tmp_path / "outside.txt")
    pinned = commit_version(repo, "0.2.2")
    builder = VenvBuilder(tmp_path / "work", openenv=repo)
    (line,) = overrides(builder, tmp_path / "log", f"openenv[core] @ {GIT}{pinned}")
    assert "openenv-0.2.2-" in line
    assert not (tmp_path / "work" / f"openenv-{pinned}" / "secret.txt").is_symlink()
