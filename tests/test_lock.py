"""Locked dependencies: a staged env's resolution, what the build does with it, and the envs
that cannot be locked. Packages come from a local index of tiny wheels on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from rich.console import Console

from releaselib.console import print_board
from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.ledger.ledger import Ledger
from releaselib.ledger.report import build_report, render_briefing, unlocked_reason
from releaselib.ledger.status import board
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.records import Lock
from releaselib.shell import Completed, run
from releaselib.space_runtime.builders import VenvBuilder
from releaselib.space_runtime.installs import plan_installs
from releaselib.space_runtime.process import lay_out
from releaselib.stage.discover import discover_envs
from releaselib.stage.lock import LockContext, lock_env
from releaselib.stage.lock_tree import CONSTRAINTS_FILE, LOCK_PATH
from releaselib.stage.stage_env import StageRun, stage_env
from tests.helpers import release_config, task, waits
from tests.package_index import PackageIndex, serve_index

PIP_SPACE = (
    "FROM python:3.11-slim\nWORKDIR /app\nCOPY requirements.txt .\n"
    "RUN pip install -r requirements.txt\n"
    'CMD ["python", "-c", "import tinydep"]\n'
)


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PackageIndex]:
    """The index with tinydep 1.0 published; uv's cache is this test's own."""
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    with serve_index(tmp_path / "index") as served:
        served.publish("tinydep", "1.0")
        yield served


def space(folder: Path, dockerfile: str, files: dict[str, str]) -> Path:
    for path, text in {"Dockerfile": dockerfile, **files}.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    return folder


class Counting:
    """The real runner, counting the resolutions it runs."""

    def __init__(self) -> None:
        self.resolutions = 0

    def __call__(
        self, args: Sequence[str], *, cwd: Path | None = None, timeout: float = 60
    ) -> Completed:
        self.resolutions += "compile" in args
        return run(args, cwd=cwd, timeout=waits(timeout))


def context(tmp_path: Path, runner: Counting | None = None) -> LockContext:
    return LockContext(tmp_path, "main", runner or Counting(), tmp_path / "lock-cache")


def installed(tree: Path, work: Path) -> str:
    """Build ``tree`` with the venv builder into a new env; tinydep's installed version."""
    builder = VenvBuilder(work, cache_dir=Path(str(work) + "-uv"), timeout=waits(120))
    env_dir = work / "env"
    layout = lay_out(tree, work / "layout", base_path=builder.base_path(env_dir))
    builder.build(layout, env_dir, work / "build.log")
    [found] = env_dir.glob("lib/python*/site-packages/tinydep-*.dist-info")
    return found.name.removesuffix(".dist-info").split("-")[1]


def staged_env(checkout: Path, staging: Path, run: StageRun) -> Path:
    """Stage the checkout's tiny_env into ``staging``; its staged tree. Every recorded change
    to its Dockerfile names the line of the staged file it is on, the lock's blocks included."""
    config = release_config(checkout, staging)
    [spec] = [s for s in discover_envs(checkout) if s.name == "tiny_env"]
    staged = stage_env(config, spec, PluginRegistry(get_plugin_manager()), run)
    assert staged.ok, staged.error
    lines = (staged.staged_dir / "Dockerfile").read_text().splitlines()
    for change in staged.changes:
        if change.file == "Dockerfile" and change.line is not None and change.after:
            assert lines[change.line - 1] == change.after.splitlines()[0], change
    return staged.staged_dir


def test_a_new_release_published_after_the_candidate_built_reaches_only_the_unlocked_rebuild(
    index: PackageIndex, checkout: Path, tmp_path: Path
) -> None:
    """Staged with the lock, the candidate's build and a rebuild after a breaking release
    install the same version; staged with --no-lock, the rebuild takes the new one."""
    readme = "---\ntitle: Tiny\nsdk: docker\napp_port: 8000\n---\n# tiny\n"
    env = {"requirements.txt": index.options() + "tinydep>=1\n", "README.md": readme}
    space(checkout / "envs" / "tiny_env", PIP_SPACE, env)
    locked = staged_env(checkout, tmp_path / "locked", StageRun(lock_cache=tmp_path / "cache"))
    unlocked = staged_env(checkout, tmp_path / "unlocked", StageRun(lock=False))
    assert (locked / CONSTRAINTS_FILE).read_text() == "tinydep==1.0\n"
    assert not (unlocked / CONSTRAINTS_FILE).exists()
    assert installed(locked, tmp_path / "candidate") == "1.0"
    assert installed(unlocked, tmp_path / "candidate-unlocked") == "1.0"
    index.publish("tinydep", "2.0")  # the breaking release, between the build and a rebuild
    assert installed(locked, tmp_path / "rebuild") == "1.0"
    assert installed(unlocked, tmp_path / "rebuild-unlocked") == "2.0"


def test_every_installer_of_the_build_reads_the_lock(index: PackageIndex, tmp_path: Path) -> None:
    """pip through PIP_CONSTRAINT, uv pip through UV_CONSTRAINT, uv sync through the project's
    [tool.uv] constraint-dependencies; the venv builder passes each as its tool would."""
    dockerfile = (
        "FROM python:3.11-slim AS build\nWORKDIR /app\nCOPY . .\n"
        "RUN uv pip install --system tinydep\nRUN uv sync --no-editable\n"
        'FROM python:3.11-slim\nCOPY --from=build /app /app\nCMD ["python", "-m", "app"]\n'
    )
    pyproject = '[project]\nname = "app"\nversion = "0"\ndependencies = ["tinydep"]\n'
    tree = space(
        tmp_path / "s",
        dockerfile,
        {"pyproject.toml": pyproject, "requirements.txt": index.options()},
    )
    lock, changes = lock_env(tree, context(tmp_path))
    assert lock.digest, lock
    df = Dockerfile.parse((tree / "Dockerfile").read_text())
    env = df.stage_env(0)
    assert env["PIP_CONSTRAINT"] == env["UV_CONSTRAINT"] == LOCK_PATH
    assert "PIP_CONSTRAINT" not in df.stage_env(1)  # a stage without RUN lines is left alone
    assert "tinydep==1.0" in (tree / "pyproject.toml").read_text()
    layout = lay_out(tree, tmp_path / "work", base_path="/usr/bin")
    pip_install, sync = plan_installs(layout)
    assert pip_install.args[-2:] == ("-c", str(layout.roots[0] / LOCK_PATH.lstrip("/")))
    assert sync.pins == ("tinydep==1.0",)
    assert {c.file for c in changes} == {CONSTRAINTS_FILE, "Dockerfile", "pyproject.toml"}


def test_an_env_constraint_of_its_own_is_kept_and_honoured(
    index: PackageIndex, tmp_path: Path
) -> None:
    index.publish("tinydep", "2.0")
    dockerfile = PIP_SPACE.replace(
        "COPY requirements.txt .\n", "COPY . .\nENV PIP_CONSTRAINT=/app/c.txt\n"
    )
    files = {"requirements.txt": index.options() + "tinydep\n", "c.txt": "tinydep<2\n"}
    tree = space(tmp_path / "s", dockerfile, files)
    lock, _ = lock_env(tree, context(tmp_path))
    assert (tree / CONSTRAINTS_FILE).read_text() == "tinydep==1.0\n", lock
    env = Dockerfile.parse((tree / "Dockerfile").read_text()).stage_env(0)
    assert env["PIP_CONSTRAINT"] == f"{LOCK_PATH} /app/c.txt"
    missing = space(tmp_path / "m", dockerfile.replace("/app/c.txt", "/etc/elsewhere.txt"), files)
    with pytest.raises(Exception, match=r"Dockerfile line 4: PIP_CONSTRAINT=/etc/elsewhere.txt"):
        lock_env(missing, context(tmp_path))


def test_an_unchanged_env_is_resolved_once(index: PackageIndex, tmp_path: Path) -> None:
    runner = Counting()
    files = {"requirements.txt": index.options() + "tinydep\n"}
    first, _ = lock_env(space(tmp_path / "a", PIP_SPACE, files), context(tmp_path, runner))
    index.publish("tinydep", "2.0")  # the cache answers by inputs: the next release is the same
    again, _ = lock_env(space(tmp_path / "b", PIP_SPACE, files), context(tmp_path, runner))
    assert runner.resolutions == 1 and again == first
    changed = {"requirements.txt": index.options() + "tinydep>=1\n"}
    moved, _ = lock_env(space(tmp_path / "c", PIP_SPACE, changed), context(tmp_path, runner))
    assert runner.resolutions == 2 and moved.digest != first.digest


@pytest.mark.parametrize(
    ("dockerfile", "requirements", "reason"),
    [
        (PIP_SPACE.replace('CMD ["python", "-c", "import tinydep"]', 'CMD ["sh", "-c", "pip install tinydep && python -m app"]'),
         "tinydep\n", "installs at run time (sh -c 'pip install tinydep && python -m app')"),
        ("FROM debian:12\nRUN apt-get update && apt-get install -y python3\nCMD [\"python3\"]\n",
         "tinydep\n", "apt only (the Dockerfile installs no Python packages)"),
        (PIP_SPACE, "tinydep>=5\n", "resolution failed: Because only tinydep==1.0 is available and you "
         "require tinydep>=5, we can conclude that your requirements are unsatisfiable."),
        (PIP_SPACE.replace("FROM python:3.11-slim\n", "FROM python:3.13-slim AS b\nCOPY requirements.txt .\n"
                           "RUN pip install -r requirements.txt\nFROM python:3.10-slim\n"),
         "tinydep\n", "stages that install run different Pythons: 3.10 (python:3.10-slim), 3.13 (python:3.13-slim)"),
        (PIP_SPACE.replace("COPY requirements.txt .\n", "COPY . .\nRUN pip install ./vendor/mypkg\n"),
         "tinydep\n", "installs a local package the lock cannot read: ./vendor/mypkg"),
    ],
)  # fmt: skip
def test_an_env_that_cannot_be_locked_says_why_and_is_left_unlocked(
    index: PackageIndex, tmp_path: Path, dockerfile: str, requirements: str, reason: str
) -> None:
    setup = 'from setuptools import setup\nsetup(name="mypkg", install_requires=["anyio<4"])\n'
    files = {"requirements.txt": index.options() + requirements, "vendor/mypkg/setup.py": setup}
    tree = space(tmp_path / "s", dockerfile, files)
    before = (tree / "Dockerfile").read_text()
    lock, changes = lock_env(tree, context(tmp_path))
    assert lock == Lock(unlocked=reason)
    assert changes == [] and (tree / "Dockerfile").read_text() == before
    assert not (tree / CONSTRAINTS_FILE).exists()


def test_no_lock_stages_the_env_as_it_is_and_says_so(checkout: Path, tmp_path: Path) -> None:
    config = release_config(checkout, tmp_path / "staging")
    [spec] = [s for s in discover_envs(checkout) if s.name == "echo_env"]
    staged = stage_env(config, spec, PluginRegistry(get_plugin_manager()), StageRun(lock=False))
    assert staged.ok and staged.lock == Lock(unlocked="--no-lock")
    assert not (staged.staged_dir / CONSTRAINTS_FILE).exists()
    shutil.rmtree(tmp_path / "staging")


def test_no_lock_is_a_stage_flag_and_the_briefing_and_board_say_so(
    checkout: Path, tmp_path: Path
) -> None:
    flags = ("--repo", str(checkout), "--staging-dir", str(tmp_path / "s"))
    staged = task("stage", *flags, "--env", "echo_env", "--no-lock", "--json")
    assert staged.returncode == 0, staged.stderr
    assert json.loads(staged.stdout)["envs"][0]["lock"] == {"unlocked": "--no-lock"}
    report = task("report", *flags, "--json")
    assert report.returncode == 0, report.stderr
    doc = json.loads(report.stdout)
    assert doc["unlocked"] == [{"env": "echo_env", "reason": unlocked_reason("--no-lock")}]
    briefing = render_briefing(doc)
    assert "## Not locked\n\n- echo_env: --no-lock: staged without a lock" in briefing
    assert "- not locked: --no-lock\n" in briefing
    path = tmp_path / "s" / "ledger-openenv-0.2.2.json"
    ledger = Ledger.load(path, json.loads(path.read_text())["release"])
    [row] = board(ledger, {}, release_config(checkout, tmp_path / "s"))
    assert row.as_json()["locked"] == "skipped" and row.unlocked == "--no-lock"
    console = Console(record=True, width=200)
    print_board(console, [row])
    said = console.export_text().splitlines()
    assert "echo_env: not locked: --no-lock" in said  # its own line: the next command ends its own
    assert not any("next, " in line and "not locked" in line for line in said)


def test_the_briefing_shows_each_env_lock_digest(tmp_path: Path) -> None:
    config = release_config(tmp_path, tmp_path)
    ledger = Ledger.load(tmp_path / "ledger.json", config.as_json())
    lock = Lock(
        digest="0123456789abcdef",
        packages=12,
        python="3.11",
        note="direct URL requirements unlocked: x",
    )
    ledger.record(
        "echo_env", "stage", status="done", manifest_hash="h", space_id="o/e", lock=lock.as_json()
    )
    ledger.record(
        "chat_env",
        "stage",
        status="done",
        manifest_hash="h",
        space_id="o/c",
        lock=Lock(unlocked="apt only (x)").as_json(),
    )
    doc = build_report(config, ledger)
    briefing = render_briefing(doc)
    assert (
        "- lock: `0123456789abcdef` (12 pins for Python 3.11; direct URL requirements unlocked: x)"
        in briefing
    )
    assert "## Not locked\n\n- chat_env: apt only (x)\n" in briefing
    assert [e["lock"] for e in doc["envs"]] == [
        Lock(unlocked="apt only (x)").as_json(),
        lock.as_json(),
    ]


@pytest.mark.parametrize(
    ("dockerfile", "files"),
    [
        ("FROM python:3.11-slim\nWORKDIR /app\nCOPY . .\nRUN apt-get install -y -f git && uv sync\nCMD [\"python\"]\n",
         {"pyproject.toml": '[project]\nname = "app"\nversion = "0"\ndependencies = ["tinydep"]\n'
          '[tool.uv]\nno-index = true\nfind-links = ["{url}"]\n'}),
        ("FROM python:3.11-slim\nRUN pip install --no-index --find-links={url} tinydep\nCMD [\"python\"]\n", {}),
    ],
)  # fmt: skip
def test_the_resolution_reads_the_index_the_build_reads(
    index: PackageIndex, tmp_path: Path, dockerfile: str, files: dict[str, str]
) -> None:
    """A project's [tool.uv] index settings and a RUN's index options reach the resolution
    (PyPI has no tinydep: without them the resolution fails)."""
    files = {name: text.replace("{url}", index.url) for name, text in files.items()}
    tree = space(tmp_path / "s", dockerfile.replace("{url}", index.url), files)
    lock, _ = lock_env(tree, context(tmp_path))
    assert lock.digest, lock
    assert (tree / CONSTRAINTS_FILE).read_text() == "tinydep==1.0\n"


def test_the_lock_takes_the_python_of_the_stage_that_installs(
    index: PackageIndex, tmp_path: Path
) -> None:
    dockerfile = PIP_SPACE.replace(
        "FROM python:3.11-slim\n",
        "FROM python:3.13-slim AS tools\nRUN echo hi\nFROM python:3.10-slim\n",
    )
    tree = space(tmp_path / "s", dockerfile, {"requirements.txt": index.options() + "tinydep\n"})
    lock, _ = lock_env(tree, context(tmp_path))
    assert lock.python == "3.10" and lock.digest, lock
