"""Staging pins OpenEnv in every file the build reads, and the staged tree gets git."""

from __future__ import annotations

from pathlib import Path

from releaselib.stage.checks import check_git
from tests import test_stage
from tests.helpers import TEST_SHA, make_env
from tests.test_stage import stage

repo = test_stage.repo  # the fixture

PIN = f"openenv-core[core] @ git+https://github.com/huggingface/OpenEnv.git@{TEST_SHA}"
SLIM = """\
FROM python:3.11-slim
WORKDIR /app
COPY deps/ /app/deps/
COPY . /app/env
RUN pip install --no-cache-dir -r deps/requirements.txt -c deps/pins.cfg
CMD ["python", "-m", "server.app"]
"""


def replaced_after(changes: list, before: str) -> str:
    return next(c.after for c in changes if c.before == before)


def test_requirements_reached_through_r_and_c_are_pinned_and_git_installed(
    repo: Path,
    tmp_path: Path,
) -> None:
    make_env(
        repo,
        "a_env",
        **{
            "server/Dockerfile": SLIM,
            "deps/requirements.txt": "fastapi  # web\n-r base.in\n",
            "deps/base.in": "openenv[core]>=0.2.0,<1.0 ; python_version >= '3.10'  # range\n",
            "deps/pins.cfg": "openenv-core==0.2.1\n",
        },
    )
    staged = stage(repo, tmp_path)["a_env"]
    assert staged.ok, staged.error
    tree = staged.staged_dir
    assert (tree / "deps" / "base.in").read_text() == (
        f"{PIN} ; python_version >= '3.10'  # range\n"
    )
    assert (tree / "deps" / "pins.cfg").read_text() == ""  # pip refuses URLs in constraints
    assert replaced_after(staged.changes, "openenv-core==0.2.1") == ""
    replaced = {c.before: c for c in staged.changes if c.file.startswith("deps/")}
    assert set(replaced) == {
        "openenv[core]>=0.2.0,<1.0 ; python_version >= '3.10'",
        "openenv-core==0.2.1",
    }
    assert (
        "<1.0,>=0.2.0 would install a PyPI release"
        in replaced["openenv[core]>=0.2.0,<1.0 ; python_version >= '3.10'"].why
    )
    dockerfile = (tree / "Dockerfile").read_text()
    assert dockerfile.index("apt-get install -y --no-install-recommends git") < dockerfile.index(
        "pip install --no-cache-dir -r deps/requirements.txt"
    )
    assert list(check_git(tree)) == []
    assert "git-for-git-deps:ok" in staged.checks


def test_a_uv_git_source_at_another_rev_is_pointed_at_the_ref(
    repo: Path,
    tmp_path: Path,
) -> None:
    pyproject = (
        '[project]\nname = "x"\nversion = "0.1.0"\n'
        'dependencies = ["openenv-core[core]>=0.2.0,<1.0"]\n\n'
        "[tool.uv.sources]\n"
        'openenv-core = { git = "https://github.com/huggingface/OpenEnv.git", rev = "v0.1.0" }\n'
    )
    make_env(repo, "a_env", **{"pyproject.toml": pyproject})
    staged = stage(repo, tmp_path)["a_env"]
    assert staged.ok, staged.error
    text = (staged.staged_dir / "pyproject.toml").read_text()
    assert f'rev = "{TEST_SHA}"' in text and "v0.1.0" not in text
    assert f'"{PIN}"' in text
    [source] = [c for c in staged.changes if c.file == "pyproject.toml" and "source" in c.why]
    assert 'rev = "v0.1.0"' in source.before and f"pinned to {TEST_SHA}" in source.why


def test_a_readme_with_a_bom_is_staged_with_its_front_matter(
    repo: Path,
    tmp_path: Path,
) -> None:
    readme = "\ufeff---\ntitle: Kept\nsdk: docker\napp_port: 8000\nemoji: x\n---\n# Body\n"
    make_env(repo, "a_env", **{"README.md": readme.encode("utf-8")})
    staged = stage(repo, tmp_path)["a_env"]
    assert staged.ok, staged.error
    card = (staged.staged_dir / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\ntitle: Kept\n") and "emoji: x" in card


def test_ports_that_disagree_fail_only_that_env(repo: Path, tmp_path: Path) -> None:
    make_env(repo, "a_env", **{"openenv.yaml": "port: 8004\n"})
    make_env(repo, "b_env")
    staged = stage(repo, tmp_path)
    assert staged["b_env"].ok
    error = staged["a_env"].error or ""
    assert "openenv.yaml port 8004 disagrees with README.md app_port 8000" in error
    assert "\n" not in error


def test_setup_py_naming_openenv_fails_the_env_with_one_line(repo: Path, tmp_path: Path) -> None:
    make_env(repo, "a_env", **{"setup.py": 'setup(install_requires=["openenv-core>=0.2"])\n'})
    make_env(repo, "b_env")
    staged = stage(repo, tmp_path)
    error = staged["a_env"].error or ""
    assert "envs/a_env/setup.py: install_requires names 'openenv-core>=0.2'" in error
    assert "\n" not in error and staged["b_env"].ok


def test_a_constraints_only_file_loses_its_openenv_line(repo: Path, tmp_path: Path) -> None:
    make_env(
        repo,
        "a_env",
        **{
            "server/Dockerfile": SLIM,
            "deps/requirements.txt": "fastapi\n-c ../constraints.txt\n",
            "deps/pins.cfg": "uvicorn==0.30.0\n",
            "constraints.txt": "openenv-core==0.2.1\nfastapi<1\n",
        },
    )
    staged = stage(repo, tmp_path)["a_env"]
    assert staged.ok, staged.error
    assert (staged.staged_dir / "constraints.txt").read_text() == "fastapi<1\n"
    assert replaced_after(staged.changes, "openenv-core==0.2.1") == ""


def test_a_conda_environment_naming_openenv_fails_the_env_with_one_line(
    repo: Path, tmp_path: Path
) -> None:
    conda = "name: x\ndependencies:\n  - python=3.11\n  - pip:\n    - openenv-core==0.2.1  # old\n"
    make_env(repo, "a_env", **{"environment.yml": conda})
    make_env(repo, "b_env")
    staged = stage(repo, tmp_path)
    error = staged["a_env"].error or ""
    assert "environment.yml: its pip section names 'openenv-core==0.2.1'" in error
    assert "\n" not in error and staged["b_env"].ok
