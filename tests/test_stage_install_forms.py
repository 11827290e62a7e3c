"""Install forms beyond requirements files and pyprojects: each staged build gets the release's
OpenEnv, or the env fails staging naming the file and line."""

from __future__ import annotations

from pathlib import Path

from tests import test_stage
from tests.helpers import TEST_SHA, make_env, write
from tests.test_stage import stage

repo = test_stage.repo  # the fixture

GIT = "https://github.com/huggingface/OpenEnv.git"
PIN = f"openenv-core[core] @ git+{GIT}@{TEST_SHA}"


def slim(*runs: str) -> str:
    """A python:slim Dockerfile that copies the env to /app/env and runs ``runs`` there."""
    body = "\n".join(runs)
    return (
        "FROM python:3.11-slim\nWORKDIR /app/env\nCOPY . /app/env\n"
        f"RUN apt-get update && apt-get install -y git\n{body}\n"
        'CMD ["python", "-m", "server.app"]\n'
    )


PIPFILE = """\
[[source]]
url = "https://pypi.org/simple"
name = "pypi"

[packages]
fastapi = "*"  # web
openenv-core = {version = ">=0.1", extras = ["cli"], markers = "python_version >= '3.10'"}

[dev-packages]
openenv = "==0.1.0"
"""


def test_a_pipfile_is_pinned_in_pipenvs_git_form(repo: Path, tmp_path: Path) -> None:
    make_env(
        repo,
        "a_env",
        **{
            "server/Dockerfile": slim("RUN pip install pipenv && pipenv install --system"),
            "Pipfile": PIPFILE,
        },
    )
    staged = stage(repo, tmp_path)["a_env"]
    assert staged.ok, staged.error
    pinned = f'git = "{GIT}", ref = "{TEST_SHA}"'
    for rel in ("Pipfile", "envs/a_env/Pipfile"):
        text = (staged.staged_dir / rel).read_text()
        assert (
            f'openenv-core = {{{pinned}, extras = ["core", "cli"], '
            "markers = \"python_version >= '3.10'\"}" in text
        )
        assert f'[dev-packages]\nopenenv-core = {{{pinned}, extras = ["core"]}}' in text
        assert 'fastapi = "*"  # web' in text
    lines = {(c.file, c.line) for c in staged.changes if "Pipfile" in c.file}
    assert ("Pipfile", 7) in lines and ("Pipfile", 10) in lines


def test_a_pipfile_lock_of_another_openenv_fails_the_env_naming_it(
    repo: Path, tmp_path: Path
) -> None:
    lock = '{\n "_meta": {},\n "default": {\n  "openenv-core": {"version": "==0.1.0"}\n }\n}\n'
    make_env(
        repo,
        "a_env",
        **{
            "server/Dockerfile": slim("RUN pip install pipenv && pipenv install --deploy"),
            "Pipfile": PIPFILE,
            "Pipfile.lock": lock,
        },
    )
    make_env(repo, "b_env")
    results = stage(repo, tmp_path)
    staged = results["a_env"]
    assert not staged.ok
    assert f"Pipfile.lock:4: locks openenv-core ==0.1.0, not OpenEnv at {TEST_SHA}" in staged.error
    assert "delete Pipfile.lock" in staged.error
    assert results["b_env"].ok, results["b_env"].error


def test_a_requirements_file_chosen_by_arg_or_env_default_is_pinned(
    repo: Path, tmp_path: Path
) -> None:
    reqs = {"deps/reqs.txt": "openenv-core==0.1.0\n"}
    make_env(
        repo,
        "arg_env",
        **{
            "server/Dockerfile": slim("ARG REQS=deps/reqs.txt", "RUN pip install -r ${REQS}"),
            **reqs,
        },
    )
    make_env(
        repo,
        "env_env",
        **{
            "server/Dockerfile": slim("ENV REQS=deps/reqs.txt", 'RUN pip install -r "$REQS"'),
            **reqs,
        },
    )
    results = stage(repo, tmp_path)
    for name in ("arg_env", "env_env"):
        staged = results[name]
        assert staged.ok, staged.error
        assert (staged.staged_dir / "deps/reqs.txt").read_text() == PIN + "\n"


def test_a_requirements_file_chosen_at_build_time_fails_naming_the_line(
    repo: Path, tmp_path: Path
) -> None:
    make_env(
        repo,
        "a_env",
        **{
            "server/Dockerfile": slim("ARG REQS", "RUN pip install \\\n    -r ${REQS}"),
            "deps/reqs.txt": "openenv\n",
        },
    )
    staged = stage(repo, tmp_path)["a_env"]
    assert not staged.ok
    assert staged.error == (
        "a_env: envs/a_env/server/Dockerfile:7: installs requirements ${REQS}, a file chosen "
        "at build time that staging cannot read to pin OpenEnv; give REQS a default with ARG "
        "or ENV before this RUN, or name the file"
    )


def test_pip_from_python_code_fails_and_python_m_pip_in_sh_c_is_pinned(
    repo: Path, tmp_path: Path
) -> None:
    code = "import subprocess; subprocess.run(['pip','install','openenv-core==0.1'])"
    make_env(repo, "code_env", **{"server/Dockerfile": slim(f'RUN python3 -c "{code}"')})
    make_env(
        repo,
        "shc_env",
        **{
            "server/Dockerfile": slim(
                "RUN sh -c 'python -m pip install openenv-core==0.1 && python -m pip install -r r.txt'"
            ),
            "r.txt": "openenv>=0.1\n",
        },
    )
    system = "import os; os.system('pip install openenv==0.1')"
    make_env(
        repo, "system_env", **{"server/Dockerfile": slim(f'RUN sh -c "python -c \\"{system}\\""')}
    )
    reads = "from importlib.metadata import version; print(version('openenv-core'))"
    make_env(repo, "reads_env", **{"server/Dockerfile": slim(f'RUN python -c "{reads}"')})
    results = stage(repo, tmp_path)
    assert results["reads_env"].ok, results["reads_env"].error  # names OpenEnv, installs nothing
    assert "Python code installs 'openenv==0.1'" in (results["system_env"].error or "")
    assert not results["code_env"].ok
    assert results["code_env"].error.startswith(
        "code_env: envs/code_env/server/Dockerfile:5: Python code installs 'openenv-core==0.1', "
        "which staging cannot pin"
    )
    staged = results["shc_env"]
    assert staged.ok, staged.error
    dockerfile = (staged.staged_dir / "Dockerfile").read_text()
    assert f'python -m pip install "{PIN}" && python -m pip install -r r.txt\'' in dockerfile
    assert (staged.staged_dir / "r.txt").read_text() == PIN + "\n"  # read inside sh -c


def test_a_hashed_requirements_file_fails_and_a_lone_hash_is_dropped(
    repo: Path, tmp_path: Path
) -> None:
    hashed = "fastapi==0.110.0 \\\n    --hash=sha256:aaaa\nopenenv-core==0.1.0 \\\n    --hash=sha256:bb\n"
    run = slim("RUN pip install -r requirements.txt")
    make_env(repo, "mixed_env", **{"server/Dockerfile": run, "requirements.txt": hashed})
    lone = "fastapi==0.110.0\nopenenv-core==0.1.0 --hash=sha256:bb\n"
    make_env(repo, "lone_env", **{"server/Dockerfile": run, "requirements.txt": lone})
    results = stage(repo, tmp_path)
    assert not results["mixed_env"].ok
    assert results["mixed_env"].error.startswith(
        "mixed_env: envs/mixed_env/requirements.txt:3: pins 'openenv-core==0.1.0' to the "
        "release's git URL, which pip cannot hash-check, and line 1 puts pip in hash-checking"
    )
    staged = results["lone_env"]
    assert staged.ok, staged.error
    assert (staged.staged_dir / "requirements.txt").read_text() == f"fastapi==0.110.0\n{PIN}\n"


def test_an_include_outside_the_env_or_a_remote_one_fails_naming_the_line(
    repo: Path, tmp_path: Path
) -> None:
    write(repo / "envs" / "common.txt", "openenv-core==0.1.0\n")  # in the checkout only
    run = slim("RUN pip install -r requirements.txt")
    make_env(
        repo,
        "up_env",
        **{"server/Dockerfile": run, "requirements.txt": "fastapi\n-r ../common.txt\n"},
    )
    make_env(
        repo,
        "url_env",
        **{"server/Dockerfile": run, "requirements.txt": "-c https://example.com/c.txt\n"},
    )
    make_env(repo, "run_env", **{"server/Dockerfile": slim("RUN pip install -r ../common.txt")})
    results = stage(repo, tmp_path)
    assert results["up_env"].error == (
        "up_env: envs/up_env/requirements.txt:2: -r ../common.txt is not in the staged tree "
        "(only the env's folder is staged), so pip cannot open it; move the file into the "
        "env's folder, or copy it in a plugin fix"
    )
    assert results["url_env"].error.startswith(
        "url_env: envs/url_env/requirements.txt:1: -c https://example.com/c.txt is fetched at "
        "build time; staging cannot pin OpenEnv in it"
    )
    assert results["run_env"].error.startswith(
        "run_env: envs/run_env/server/Dockerfile:5: installs requirements ../common.txt, "
        "outside what the build copies"
    )


def test_remote_installs_pin_openenv_archives_and_fail_what_cannot_be_pinned(
    repo: Path, tmp_path: Path
) -> None:
    archive = "https://github.com/meta-pytorch/OpenEnv/archive/refs/heads/main.zip"
    make_env(repo, "zip_env", **{"server/Dockerfile": slim(f"RUN pip install {archive}")})
    make_env(
        repo,
        "req_env",
        **{"server/Dockerfile": slim("RUN pip install -r https://example.com/requirements.txt")},
    )
    make_env(
        repo,
        "fork_env",
        **{"server/Dockerfile": slim("RUN pip install fastapi https://example.com/dl/openenv.zip")},
    )
    results = stage(repo, tmp_path)
    staged = results["zip_env"]
    assert staged.ok, staged.error
    assert f'RUN pip install "{PIN}"' in (staged.staged_dir / "Dockerfile").read_text()
    assert any(c.before == archive and c.after == PIN for c in staged.changes)
    assert results["req_env"].error.startswith(
        "req_env: envs/req_env/server/Dockerfile:5: installs requirements from "
        "https://example.com/requirements.txt, which staging cannot pin OpenEnv in; copy the "
        "file into the env's folder"
    )
    assert results["fork_env"].error.startswith(
        "fork_env: envs/fork_env/server/Dockerfile:5: installs https://example.com/dl/openenv.zip"
        ", a URL naming OpenEnv"
    )


def test_an_env_without_a_readme_is_staged_with_a_card_and_one_without_dockerfile_is_named(
    repo: Path, tmp_path: Path
) -> None:
    (make_env(repo, "bare_env") / "README.md").unlink()
    write(repo / "envs" / "notes" / "notes.txt", "not an env\n")
    results = stage(repo, tmp_path)
    staged = results["bare_env"]
    assert staged.ok, staged.error
    card = (staged.staged_dir / "README.md").read_text()
    assert card.startswith("---\n") and "- openenv-0.2.2\n" in card and "app_port: 8000" in card
    assert results["notes"].error == (
        "notes: not deployable (no server/Dockerfile or Dockerfile; add one, or move the "
        "folder out of envs/)"
    )


def test_hash_checking_mode_from_another_file_of_the_same_install_fails(
    repo: Path, tmp_path: Path
) -> None:
    files = {
        "requirements.txt": "-r base.txt\nopenenv-core==0.1.0 --hash=sha256:bb\n",
        "base.txt": "fastapi==0.110.0 \\\n    --hash=sha256:aaaa\n",
    }
    make_env(
        repo, "a_env", **{"server/Dockerfile": slim("RUN pip install -r requirements.txt"), **files}
    )
    staged = stage(repo, tmp_path)["a_env"]
    assert not staged.ok
    assert "requirements.txt:2: pins 'openenv-core==0.1.0' to the release's git URL" in staged.error
    assert "base.txt:1, installed with it, puts pip in hash-checking mode" in staged.error


def test_pipenv_install_of_the_pinned_pipfile_gets_git_first(repo: Path, tmp_path: Path) -> None:
    dockerfile = (
        "FROM python:3.11-slim\nWORKDIR /app/env\nCOPY . /app/env\n"
        "RUN pip install pipenv && pipenv install --system\n"
        'CMD ["python", "-m", "server.app"]\n'
    )
    make_env(repo, "a_env", **{"server/Dockerfile": dockerfile, "Pipfile": PIPFILE})
    staged = stage(repo, tmp_path)["a_env"]
    assert staged.ok, staged.error
    text = (staged.staged_dir / "Dockerfile").read_text()
    assert text.index("apt-get install") < text.index("pipenv install --system")
    assert "git-for-git-deps:ok" in staged.checks


def test_require_hashes_on_the_command_line_or_in_the_environment_fails(
    repo: Path, tmp_path: Path
) -> None:
    reqs = {"requirements.txt": "openenv-core==0.1.0\n"}
    cli = slim("RUN pip install --require-hashes -r requirements.txt")
    make_env(repo, "cli_env", **{"server/Dockerfile": cli, **reqs})
    env = slim("ENV PIP_REQUIRE_HASHES=1", "RUN pip install -r requirements.txt")
    make_env(repo, "env_env", **{"server/Dockerfile": env, **reqs})
    results = stage(repo, tmp_path)
    assert "envs/cli_env/server/Dockerfile:5's --require-hashes puts pip in hash-checking" in (
        results["cli_env"].error or ""
    )
    assert "envs/env_env/server/Dockerfile:6's PIP_REQUIRE_HASHES puts pip" in (
        results["env_env"].error or ""
    )
