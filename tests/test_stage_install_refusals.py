"""Installs whose result staging cannot know or pin fail the env naming the file and line, as a
hostile tester's staging inputs showed (issue 26): never a staged tree that builds the old
OpenEnv, or one the build refuses."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.console import Console

from releaselib.console import print_staged
from releaselib.records import Lock
from tests import test_stage
from tests.helpers import TEST_SHA, make_env
from tests.test_stage import stage
from tests.test_stage_install_forms import slim

repo = test_stage.repo  # the fixture

UNREADABLE = "staging cannot read what this installs"


def test_installs_whose_packages_staging_cannot_read_fail_naming_the_line(
    repo: Path, tmp_path: Path
) -> None:
    heredoc = (
        "RUN python3 - <<'PY'\nimport subprocess\n"
        "subprocess.check_call(['pip', 'install', 'openenv-core==0.1'])\nPY"
    )
    deps = {"deps.txt": "openenv-core==0.1.0\n"}
    make_env(repo, "heredoc_env", **{"server/Dockerfile": slim(heredoc)})
    make_env(
        repo, "subst_env", **{"server/Dockerfile": slim("RUN pip install $(cat deps.txt)"), **deps}
    )
    make_env(
        repo,
        "xargs_env",
        **{"server/Dockerfile": slim("RUN cat deps.txt | xargs pip install"), **deps},
    )
    make_env(repo, "plain_env", **{"server/Dockerfile": slim("RUN python3 - <<'PY'\nprint(1)\nPY")})
    results = stage(repo, tmp_path)
    assert results["plain_env"].ok, results["plain_env"].error
    for env, line in (("heredoc_env", 7), ("subst_env", 5), ("xargs_env", 5)):
        error = results[env].error or ""
        assert error.startswith(f"{env}: envs/{env}/server/Dockerfile:{line}: {UNREADABLE}"), error
        assert "list the packages in a requirements file" in error


def test_a_pinned_file_beside_a_hashed_one_in_the_same_pip_fails_naming_both(
    repo: Path, tmp_path: Path
) -> None:
    files = {
        "requirements.txt": "openenv-core==0.1.0 --hash=sha256:bb\n",
        "hashed.txt": "fastapi==0.110.0 \\\n    --hash=sha256:aaaa\n",
    }
    run = slim("RUN pip install -r requirements.txt -r hashed.txt")
    make_env(repo, "a_env", **{"server/Dockerfile": run, **files})
    apart = slim("RUN pip install -r requirements.txt && pip install -r hashed.txt")
    make_env(repo, "b_env", **{"server/Dockerfile": apart, **files})
    results = stage(repo, tmp_path)
    error = results["a_env"].error or ""
    assert "envs/a_env/requirements.txt:1: pins 'openenv-core==0.1.0' to the release's git" in error
    assert "envs/a_env/hashed.txt:1, installed with it, puts pip in hash-checking mode" in error
    assert results["b_env"].ok, results["b_env"].error  # two pips: each its own mode


def test_an_env_pip_constraint_drops_its_openenv_line_and_a_failed_lock_shows_in_the_table(
    repo: Path, tmp_path: Path
) -> None:
    files = {"constraints.txt": "fastapi<1\nopenenv-core<0.2.2\n"}
    run = slim("ENV PIP_CONSTRAINT=/app/env/constraints.txt", "RUN pip install fastapi")
    make_env(repo, "a_env", **{"server/Dockerfile": run, **files})
    staged = stage(repo, tmp_path)["a_env"]
    assert staged.ok, staged.error
    assert (staged.staged_dir / "constraints.txt").read_text() == "fastapi<1\n"  # what COPY lands
    assert ("constraints.txt", 2) in {(c.file, c.line) for c in staged.changes}
    console = Console(record=True, width=200)
    failed = replace(staged, lock=Lock(unlocked="resolution failed: no fastapi<1 for 3.11"))
    print_staged(console, [failed])
    said = console.export_text()
    assert "warning: a_env: not locked: resolution failed: no fastapi<1 for 3.11" in said


POETRY = """\
[tool.poetry]
name = "a-server"
version = "0.1.0"

[tool.poetry.dependencies]
python = "^3.11"
openenv-core = "^0.2.1"
"""


def test_a_poetry_project_in_a_subfolder_is_pinned_and_its_poetry_lock_fails(
    repo: Path, tmp_path: Path
) -> None:
    run = slim("RUN pip install poetry && cd server && poetry install")
    make_env(
        repo,
        "lock_env",
        **{
            "server/Dockerfile": run,
            "server/pyproject.toml": POETRY,
            "server/poetry.lock": "# locked\n",
        },
    )
    make_env(repo, "plain_env", **{"server/Dockerfile": run, "server/pyproject.toml": POETRY})
    pdm = '[project]\nname = "x"\n\n[tool.pdm.dev-dependencies]\ntest = ["openenv>=0.1"]\n'
    make_env(repo, "pdm_env", **{"server/Dockerfile": run, "server/pyproject.toml": pdm})
    results = stage(repo, tmp_path)
    assert (results["lock_env"].error or "").startswith(
        "lock_env: envs/lock_env/server/poetry.lock: locks the pyproject.toml beside it"
    )
    staged = results["plain_env"]
    assert staged.ok, staged.error
    text = (staged.staged_dir / "server/pyproject.toml").read_text()
    assert (
        f'openenv-core = {{git = "https://github.com/huggingface/OpenEnv.git", rev = "{TEST_SHA}"'
        in text
    )
    assert (results["pdm_env"].error or "").startswith(
        "pdm_env: envs/pdm_env/server/pyproject.toml:5: [tool.pdm.dev-dependencies] test names "
        "'openenv>=0.1', an OpenEnv dependency staging does not rewrite"
    )


def test_a_pipfile_lock_beside_a_rewritten_pipfile_fails_naming_it(
    repo: Path, tmp_path: Path
) -> None:
    pipfile = '[packages]\nfastapi = "*"\nopenenv-core = ">=0.1"\n'
    lock = '{\n "_meta": {"hash": {"sha256": "aa"}},\n "default": {"fastapi": {"version": "==0.110.0"}}\n}\n'
    run = slim("RUN pip install pipenv && pipenv install --system --deploy")
    make_env(repo, "a_env", **{"server/Dockerfile": run, "Pipfile": pipfile, "Pipfile.lock": lock})
    unpinned = '[packages]\nfastapi = "*"\n'
    make_env(repo, "b_env", **{"server/Dockerfile": run, "Pipfile": unpinned, "Pipfile.lock": lock})
    results = stage(repo, tmp_path)
    error = results["a_env"].error or ""
    assert error.startswith("a_env: envs/a_env/Pipfile.lock: locks the Pipfile beside it"), error
    assert "delete envs/a_env/Pipfile.lock" in error
    assert results["b_env"].ok, results["b_env"].error  # nothing rewritten: its lock holds
