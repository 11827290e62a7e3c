"""``invoke plugin.new``: the scaffolded plugin registers, lints, type-checks, and has the shape
the built-in plugins' meta-test checks for every module."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from invoke.collection import Collection
from invoke.program import Program

from openenv_release.plugin_tasks import plugin
from releaselib.errors import UsageError
from releaselib.scaffold import new_plugin, register
from tests.helpers import waits

PROJECT = Path(__file__).resolve().parents[1]
META_TEST = "tests/env_plugins/test_builtin_plugins.py"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of env_plugins/ and its meta-test, the tool config, and releaselib linked."""
    root = tmp_path / "project"
    shutil.copytree(
        PROJECT / "env_plugins", root / "env_plugins", ignore=shutil.ignore_patterns("__pycache__")
    )
    (root / "tests" / "env_plugins").mkdir(parents=True)
    (root / "tests" / "__init__.py").touch()
    (root / "tests" / "env_plugins" / "__init__.py").touch()
    shutil.copyfile(PROJECT / META_TEST, root / META_TEST)
    shutil.copyfile(PROJECT / "tests" / "helpers.py", root / "tests" / "helpers.py")  # it imports it
    shutil.copyfile(PROJECT / "pyproject.toml", root / "pyproject.toml")
    (root / "releaselib").symlink_to(PROJECT / "releaselib")
    return root


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """An OpenEnv checkout (as far as plugin.new looks) with the envs these tests name."""
    repo = tmp_path / "OpenEnv"
    (repo / "pyproject.toml").parent.mkdir()
    (repo / "pyproject.toml").write_text('[project]\nname = "openenv"\nversion = "0.2.2"\n')
    for env in ("fancy_env", "echo_env", "class"):
        (repo / "envs" / env).mkdir(parents=True)
    return repo


def task(project: Path, *argv: str) -> int:
    """``invoke plugin.new ARGV --root PROJECT``'s exit code."""
    try:
        Program(namespace=Collection(plugin)).run(
            ["invoke", "plugin.new", *argv, "--root", str(project)], exit=True
        )
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def builtins(root: Path) -> list[str]:
    tree = ast.parse((root / "env_plugins" / "__init__.py").read_text())
    assign = next(n for n in tree.body if isinstance(n, ast.AnnAssign))
    return list(ast.literal_eval(assign.value))  # type: ignore[arg-type]


def run(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *argv], cwd=root, capture_output=True, text=True, timeout=waits(120),
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)},
    )


def test_the_task_writes_the_plugin_and_registers_it_in_order(
    project: Path, checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = builtins(project)
    assert task(project, "--env", "fancy_env", "--repo", str(checkout)) == 0
    assert (project / "env_plugins" / "fancy_env.py").is_file()
    assert not list((project / "tests" / "env_plugins").glob("test_fancy*"))
    after = builtins(project)
    envs = [name for name in after if name.startswith("env_plugins.")]
    assert after[0] == "releaselib.stage.checks" and envs == sorted(envs)
    assert set(after) - set(before) == {"env_plugins.fancy_env"}
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("wrote ") and out[0].endswith("env_plugins/fancy_env.py")
    assert out[2].startswith("next: add its fixes and probes to env_plugins/fancy_env.py")
    assert out[2].endswith("then python -m pytest -v tests/env_plugins -k fancy_env")


def test_the_task_refuses_an_env_the_checkout_does_not_have(
    project: Path, checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    init = (project / "env_plugins" / "__init__.py").read_text()
    assert task(project, "--env", "fancy_envv", "--repo", str(checkout)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "envs/fancy_envv" in err and "did you mean fancy_env?" in err
    assert not (project / "env_plugins" / "fancy_envv.py").exists()
    assert (project / "env_plugins" / "__init__.py").read_text() == init


def test_the_task_finds_the_checkout_as_other_tasks_do_or_says_how(
    project: Path, checkout: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("OPENENV_RELEASE_REPO", raising=False)
    monkeypatch.chdir(project)  # the project root is no OpenEnv checkout
    assert task(project, "--env", "fancy_env") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--repo" in err and "OPENENV_RELEASE_REPO" in err
    assert not (project / "env_plugins" / "fancy_env.py").exists()
    monkeypatch.setenv("OPENENV_RELEASE_REPO", str(checkout))
    assert task(project, "--env", "fancy_env") == 0
    monkeypatch.delenv("OPENENV_RELEASE_REPO")
    monkeypatch.chdir(checkout)
    assert task(project, "--env", "echo_env") == 2  # found in the current directory
    assert "already has a plugin" in capsys.readouterr().err


@pytest.mark.slow  # mypy follows the plugin into releaselib, cold: about a minute
def test_the_generated_plugin_passes_the_meta_test_lint_and_types(
    project: Path, checkout: Path
) -> None:
    module, _ = new_plugin(project, "fancy_env", checkout)
    tested = run(project, "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", META_TEST)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    rel = str(module.relative_to(project))
    linted = run(project, "ruff", "check", rel)
    assert linted.returncode == 0, linted.stdout
    typed = run(project, "mypy", "--no-incremental", "--follow-imports=silent", rel)
    assert typed.returncode == 0, typed.stdout


def test_the_meta_test_fails_when_the_plugin_leaves_the_shape(
    project: Path, checkout: Path
) -> None:
    module, _ = new_plugin(project, "fancy_env", checkout)
    text = module.read_text()
    module.write_text(text.replace("(EnvProfile(ENV),)", '(EnvProfile("other_env"),)'))
    meta = ("pytest", "-q", "-p", "no:cacheprovider", "-n", "0", META_TEST, "-k", "fancy")
    assert run(project, *meta).returncode == 1  # 1: tests failed (5 would be: none selected)
    module.write_text(text.replace('ENV = "fancy_env"', 'ENV = "fancy"'))
    assert run(project, *meta).returncode == 1


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ("echo_env", "already has a plugin"),
        ("bad/name", "not a valid env name"),
        ("my-env", "cannot be a plugin module name"),
        ("class", "cannot be a plugin module name"),
        ("no_such_env", "has no env directory envs/no_such_env"),
    ],
)
def test_refuses_envs_with_a_plugin_and_names_that_cannot_be_modules(
    project: Path, checkout: Path, env: str, message: str
) -> None:
    init = (project / "env_plugins" / "__init__.py").read_text()
    with pytest.raises(UsageError, match=message):
        new_plugin(project, env, checkout)
    assert (project / "env_plugins" / "__init__.py").read_text() == init


def test_register_keeps_the_layout_at_either_end() -> None:
    text = 'X = 1\nBUILTIN_PLUGINS = (\n    "releaselib.stage.checks",\n    "releaselib.z",\n    "env_plugins.b_env"\n)\n'
    first = register(text, "env_plugins.a_env")
    assert first.splitlines()[3:6] == [
        '    "releaselib.z",',
        '    "env_plugins.a_env",',
        '    "env_plugins.b_env"',
    ]
    last = register(text, "env_plugins.c_env")
    assert last.splitlines()[4:6] == ['    "env_plugins.b_env",', '    "env_plugins.c_env",']
    assert register(text.replace('"env_plugins.b_env"', ""), "env_plugins.a_env").splitlines()[
        3:5
    ] == [
        '    "releaselib.z",',
        '    "env_plugins.a_env",',
    ]
    with pytest.raises(UsageError, match="already in BUILTIN_PLUGINS"):
        register(first, "env_plugins.a_env")
