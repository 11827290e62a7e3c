"""An env's own lock files against the rewritten requirements: uv.lock re-locked (the author's
versions kept where they still fit, OpenEnv read from the checkout at the ref), poetry.lock
refused by name."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest

from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.shell import run
from releaselib.stage.discover import discover_envs
from releaselib.stage.lock import LockContext, lock_env
from releaselib.stage.lock_files import uv_project_command
from releaselib.stage.lock_tree import CONSTRAINTS_FILE
from releaselib.stage.stage_env import StageRun, stage_env
from tests.helpers import release_config, waits
from tests.package_index import PackageIndex, serve_index

OPENENV = "openenv-core @ git+https://github.com/huggingface/OpenEnv.git@main"
SYNC_SPACE = (
    "FROM python:3.11-slim\nWORKDIR /app\nCOPY . /app\nRUN uv sync --no-editable\n"
    'CMD ["python", "-m", "app"]\n'
)


def git(cwd: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args]
    return subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True).stdout


def openenv_checkout(folder: Path) -> tuple[Path, str]:
    """A git checkout on main whose pyproject is openenv-core needing tinydep; its HEAD sha."""
    (folder / "src" / "openenv_core").mkdir(parents=True)
    (folder / "src" / "openenv_core" / "__init__.py").write_text("")
    (folder / "pyproject.toml").write_text(
        '[project]\nname = "openenv-core"\nversion = "0.2.2"\ndependencies = ["tinydep"]\n'
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
        '[tool.hatch.build.targets.wheel]\npackages = ["src/openenv_core"]\n'
    )
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "openenv")
    return folder, git(folder, "rev-parse", "HEAD").strip()


def project(folder: Path, index: PackageIndex) -> Path:
    folder.mkdir(parents=True)
    (folder / "Dockerfile").write_text(SYNC_SPACE)
    (folder / "pyproject.toml").write_text(
        f'[project]\nname = "app"\nversion = "0"\nrequires-python = ">=3.10"\n'
        f'dependencies = ["{OPENENV}", "tinydep"]\n'
        f'[tool.uv]\nno-index = true\nfind-links = ["{index.url}"]\n'
    )
    return folder


def test_an_env_uv_lock_is_relocked_keeping_its_versions_and_synced_frozen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    repo, head = openenv_checkout(tmp_path / "OpenEnv")
    with serve_index(tmp_path / "index") as index:
        index.publish("tinydep", "1.0")
        author = project(tmp_path / "author", index)
        done = run(uv_project_command(repo, "lock", "--quiet"), cwd=author, timeout=waits(120))
        assert done.ok, done.stderr
        index.publish("tinydep", "2.0")  # newer than the author's lock
        staged = project(tmp_path / "staged", index)
        ctx = LockContext(repo, "main", run, tmp_path / "lock-cache")
        lock, changes = lock_env(staged, ctx, env="app_env", uv_lock=author / "uv.lock")
        assert lock.digest and lock.note == "the env's uv.lock re-locked", lock
        assert (staged / CONSTRAINTS_FILE).read_text() == "tinydep==1.0\n"
        locked = tomllib.loads((staged / "uv.lock").read_text())
        versions = {p["name"]: p.get("version") for p in locked["package"]}
        assert versions["tinydep"] == "1.0"  # the author's version, not the newest
        [openenv] = [p for p in locked["package"] if p["name"] == "openenv-core"]
        assert openenv["source"]["git"].endswith(f"#{head}")  # the checkout's commit at main
        assert openenv["source"]["git"].startswith("https://github.com/huggingface/OpenEnv.git")
        check = run(uv_project_command(repo, "lock", "--locked"), cwd=staged, timeout=waits(120))
        assert check.ok, check.stderr  # the lock matches the constrained pyproject
    env = Dockerfile.parse((staged / "Dockerfile").read_text()).stage_env(0)
    assert env["UV_FROZEN"] == "1"
    assert "uv.lock" in {c.file for c in changes}


def test_a_uv_lock_that_cannot_be_relocked_fails_the_env_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    repo, _ = openenv_checkout(tmp_path / "OpenEnv")
    git(repo, "branch", "-m", "main", "trunk")  # the ref the pin names is not in the checkout
    with serve_index(tmp_path / "index") as index:
        index.publish("tinydep", "1.0")
        staged = project(tmp_path / "staged", index)
        (tmp_path / "uv.lock").write_text("version = 1\n")
        ctx = LockContext(repo, "main", run, tmp_path / "lock-cache")
        with pytest.raises(Exception, match=r"^envs/app_env/uv.lock: cannot be re-locked"):
            lock_env(staged, ctx, env="app_env", uv_lock=tmp_path / "uv.lock")
    assert not (staged / "uv.lock").exists() and not (staged / CONSTRAINTS_FILE).exists()


def test_a_poetry_lock_beside_a_rewritten_pyproject_fails_the_env_naming_it(
    checkout: Path, tmp_path: Path
) -> None:
    (checkout / "envs" / "echo_env" / "poetry.lock").write_text("# poetry lock\n")
    config = release_config(checkout, tmp_path / "staging")
    [spec] = [s for s in discover_envs(checkout) if s.name == "echo_env"]
    staged = stage_env(config, spec, PluginRegistry(get_plugin_manager()), StageRun(lock=False))
    assert not staged.ok
    assert staged.error is not None and staged.error.startswith(
        "echo_env: envs/echo_env/poetry.lock: locks the pyproject.toml beside it, which staging "
        "rewrote"
    )


def test_no_lock_fails_an_env_whose_build_reads_the_uv_lock_it_would_drop(
    checkout: Path, tmp_path: Path
) -> None:
    env = checkout / "envs" / "echo_env"
    (env / "uv.lock").write_text("version = 1\n")
    dockerfile = env / "server" / "Dockerfile"
    dockerfile.write_text(
        dockerfile.read_text().replace("WORKDIR /app\n", "WORKDIR /app\nENV UV_FROZEN=1\n", 1)
    )
    config = release_config(checkout, tmp_path / "staging")
    [spec] = [s for s in discover_envs(checkout) if s.name == "echo_env"]
    staged = stage_env(config, spec, PluginRegistry(get_plugin_manager()), StageRun(lock=False))
    assert not staged.ok and staged.error is not None
    assert staged.error.startswith(
        "echo_env: envs/echo_env/uv.lock: the Dockerfile reads it (line "
    )
    assert "ENV UV_FROZEN=1), but --no-lock leaves it out" in staged.error


def test_uv_docs_bind_mount_pattern_gets_the_relocked_lock_at_the_context_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """uv's Docker guide mounts uv.lock and pyproject.toml from the context instead of copying."""
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    repo, _ = openenv_checkout(tmp_path / "OpenEnv")
    with serve_index(tmp_path / "index") as index:
        index.publish("tinydep", "1.0")
        author = project(tmp_path / "author", index)
        assert run(uv_project_command(repo, "lock", "--quiet"), cwd=author, timeout=waits(120)).ok
        staged = project(tmp_path / "staged", index)
        (staged / "Dockerfile").write_text(
            "FROM python:3.11-slim\nWORKDIR /app\n"
            "RUN --mount=type=bind,source=uv.lock,target=uv.lock "
            "--mount=type=bind,source=pyproject.toml,target=pyproject.toml "
            "uv sync --locked --no-install-project\n"
            'COPY . /app\nCMD ["python", "-m", "app"]\n'
        )
        ctx = LockContext(repo, "main", run, tmp_path / "lock-cache")
        lock, _ = lock_env(staged, ctx, env="app_env", uv_lock=author / "uv.lock")
    assert lock.digest and (staged / "uv.lock").is_file()
    assert "tinydep==1.0" in (staged / "pyproject.toml").read_text()
    env = Dockerfile.parse((staged / "Dockerfile").read_text()).stage_env(0)
    assert "UV_FROZEN" not in env  # the RUN passes --locked, which uv refuses beside --frozen


def test_uvs_explanation_is_one_line_however_uv_wrapped_it() -> None:
    """uv wraps its explanation at the terminal's width (it ended at "..., we" in one run)."""
    from releaselib.stage.lock_files import uv_error

    wrapped = (
        "  \u00d7 No solution found when resolving dependencies:\n"
        "  ╰─▶ Because only tinydep==1.0 is available and you require tinydep>=5, we\n"
        "      can conclude that your requirements are unsatisfiable.\n"
        "\n"
        "      hint: Pre-releases are available for tinydep\n"
    )
    assert uv_error(wrapped, 1) == (
        "Because only tinydep==1.0 is available and you require tinydep>=5, we can conclude "
        "that your requirements are unsatisfiable."
    )


@pytest.mark.parametrize(
    ("env_line", "run_line", "error"),  # echo_env's own RUN syncs frozen only if uv.lock is there
    [
        ("ENV UV_FROZEN=1", "RUN uv sync", "envs/echo_env/server/Dockerfile:5: ENV UV_FROZEN=1 makes uv read a uv.lock"),
        ("ENV X=1", "RUN uv sync --locked", "envs/echo_env/server/Dockerfile:27: RUN uv sync --locked makes uv"),
    ],
)  # fmt: skip
def test_a_build_that_reads_a_uv_lock_the_env_lacks_fails_naming_the_line(
    checkout: Path, tmp_path: Path, env_line: str, run_line: str, error: str
) -> None:
    dockerfile = checkout / "envs" / "echo_env" / "server" / "Dockerfile"
    text = dockerfile.read_text().replace("WORKDIR /app\n", f"WORKDIR /app\n{env_line}\n", 1)
    dockerfile.write_text(text.replace("\nCMD ", f"\n{run_line}\nCMD ", 1))
    config = release_config(checkout, tmp_path / "staging")
    [spec] = [s for s in discover_envs(checkout) if s.name == "echo_env"]
    staged = stage_env(config, spec, PluginRegistry(get_plugin_manager()), StageRun(lock=False))
    assert (staged.error or "").startswith(f"echo_env: {error}"), staged.error
    assert "commit the env's uv.lock" in (staged.error or "")


def test_uv_locked_beside_uv_pip_alone_reads_no_lock_and_stages(
    checkout: Path, tmp_path: Path
) -> None:
    env = checkout / "envs" / "echo_env"
    (env / "uv.lock").write_text("version = 1\n")
    (env / "server" / "Dockerfile").write_text(
        "FROM python:3.11-slim\nWORKDIR /app/env\nCOPY . /app/env\nENV UV_LOCKED=1\n"
        "RUN pip install uv && uv pip install --system -r pyproject.toml\n"
        'CMD ["uvicorn", "server.app:app", "--host", "0.0.0.0", "--port", "8000"]\n'
    )
    config = release_config(checkout, tmp_path / "staging")
    [spec] = [s for s in discover_envs(checkout) if s.name == "echo_env"]
    staged = stage_env(config, spec, PluginRegistry(get_plugin_manager()), StageRun(lock=False))
    assert staged.ok, staged.error  # uv pip never reads uv.lock: nothing to refuse


def test_a_relock_is_cached_by_the_staged_tree_and_the_openenv_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second staging of the same tree at the same OpenEnv commit runs no uv: it gets the
    same pins and uv.lock from the cache. A changed tree, or a branch for a ref, runs uv."""
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    repo, head = openenv_checkout(tmp_path / "OpenEnv")
    ran: list[list[str]] = []
    uv_locks = lambda: sum("lock" in args for args in ran)  # noqa: E731  (git show is no uv run)

    def counted(args: list[str], **kwargs: object) -> object:
        ran.append(args)
        return run(args, **kwargs)  # type: ignore[arg-type]

    with serve_index(tmp_path / "index") as index:
        index.publish("tinydep", "1.0")
        author = project(tmp_path / "author", index)
        assert run(uv_project_command(repo, "lock", "--quiet"), cwd=author, timeout=waits(120)).ok

        def staged_lock(name: str, ref: str, extra: str = "") -> tuple[str, str]:
            staged = project(tmp_path / name, index)
            (staged / "app.py").write_text(f"print('app'){extra}\n")
            ctx = LockContext(repo, ref, counted, tmp_path / "lock-cache")  # type: ignore[arg-type]
            lock_env(staged, ctx, env="app_env", uv_lock=author / "uv.lock")
            return (staged / CONSTRAINTS_FILE).read_text(), (staged / "uv.lock").read_text()

        first = staged_lock("first", head)
        assert uv_locks() == 2
        ran.clear()
        assert staged_lock("again", head) == first and uv_locks() == 0
        for kept in (tmp_path / "lock-cache").glob("relock-*.json"):
            kept.write_text('{"pins": null, "uv_lock": null}')  # not what the cache writes
        assert staged_lock("corrupt", head) == first and uv_locks() == 2
        ran.clear()
        staged_lock("changed", head, extra="  # another tree")
        assert uv_locks() == 2
        ran.clear()
        staged_lock("branch", "main")
        staged_lock("branch-again", "main")
        assert uv_locks() == 4
