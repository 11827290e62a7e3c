"""Tests for releaselib.edit's OpenEnv dependency pinning in staged files.

Golden files live in golden/deps/: ``<name>`` is the input, ``<name>.expected`` the rewritten
text and ``<name>.changes.json`` the recorded changes. Set UPDATE_GOLDEN=1 to rewrite them.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path

import pytest

from releaselib.edit.pyproject_deps import find_openenv_requirements, rewrite_pyproject
from releaselib.edit.requirement import (
    CONSTRAINT_DROPPED,
    OPENENV_DISTS,
    pinned_requirement,
    rewrite_requirement,
    why_pinned,
)
from releaselib.edit.requirements_txt import rewrite_requirements_txt
from releaselib.edit.run_pins import rewrite_shell_command
from releaselib.edit.unrewritable_manifests import setup_requirement
from releaselib.errors import StageError
from releaselib.records import Change
from tests.helpers import assert_golden

GOLDEN = Path(__file__).parent / "golden" / "deps"
REF = "v0.3.1"
PINNED = "openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.3.1"
GIT_REPO = "https://github.com/huggingface/OpenEnv.git"


def check_golden(name: str, text: str, changes: list[Change]) -> None:
    """Compare ``text`` and ``changes`` with the golden files for input ``name``."""
    assert_golden(GOLDEN / f"{name}.expected", text)
    as_json = json.dumps([dataclasses.asdict(c) for c in changes], indent=2) + "\n"
    assert_golden(GOLDEN / f"{name}.changes.json", as_json)


# pinned_requirement


def test_pinned_requirement_plain_and_with_marker() -> None:
    assert pinned_requirement("openenv", REF) == PINNED
    assert pinned_requirement("openenv-core", "v0.2.2", 'python_version >= "3.11"') == (
        "openenv-core[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.2.2"
        ' ; python_version >= "3.11"'
    )


def test_pinned_requirement_keeps_core_first_then_other_extras() -> None:
    assert pinned_requirement("openenv", "main", extras=("CLI", "core", "all")).startswith(
        "openenv[core,all,cli] @ "
    )


@pytest.mark.parametrize(
    ("dist", "ref"), [("openenv_core", REF), ("openenv", ""), ("openenv", "a b")]
)
def test_pinned_requirement_rejects_bad_dist_or_ref(dist: str, ref: str) -> None:
    with pytest.raises(ValueError):
        pinned_requirement(dist, ref)


def test_dists() -> None:
    assert frozenset({"openenv", "openenv-core"}) == OPENENV_DISTS


# rewrite_requirement


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("openenv[core]>=0.2.1", PINNED),
        ("openenv-core[core]>=0.2.1", PINNED),
        ("openenv>=0.2.0", PINNED),
        ("openenv", PINNED),
        ("OpenEnv_Core>0.1,!=0.2.0", PINNED),
        ("openenv[core] @ git+https://github.com/huggingface/OpenEnv.git", PINNED),
        ("openenv[core] @ git+https://github.com/huggingface/OpenEnv", PINNED),
        ("openenv-core[core] @ git+https://github.com/meta-pytorch/OpenEnv.git", PINNED),
        ("openenv @ git+https://github.com/huggingface/OpenEnv.git@main", PINNED),
        ("openenv @ git+https://github.com/huggingface/OpenEnv.git@master", PINNED),
        ("git+https://github.com/huggingface/OpenEnv.git", PINNED),
        ("git+https://github.com/meta-pytorch/OpenEnv.git#egg=openenv-core", PINNED),
        ("openenv[cli]>=0.2", PINNED.replace("[core]", "[core,cli]")),
        (
            "openenv[core]>=0.2.2; python_version < '3.12'",
            PINNED + " ; python_version < '3.12'",
        ),
        (
            "openenv @ git+https://github.com/huggingface/OpenEnv.git ; sys_platform == 'linux'",
            PINNED + " ; sys_platform == 'linux'",
        ),
    ],
)
def test_rewrite_requirement_pins(spec: str, expected: str) -> None:
    assert rewrite_requirement(spec, dist="openenv", ref=REF) == expected


def test_rewrite_requirement_writes_an_ambiguous_marker_in_packagings_form() -> None:
    new = rewrite_requirement('openenv>=0.2 ; extra == "a;b"', dist="openenv", ref=REF)
    assert new == PINNED + ' ; extra == "a;b"'


def test_rewrite_requirement_uses_the_callers_dist() -> None:
    new = rewrite_requirement("openenv[core]>=0.2.2", dist="openenv-core", ref="v0.2.2")
    assert new == "openenv-core[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.2.2"


@pytest.mark.parametrize(
    "spec", ["fastapi>=0.115.0", "openenv-echo-env>=0.1", "requirements.txt", "./envs/coding_env/"]
)
def test_rewrite_requirement_leaves_others(spec: str) -> None:
    assert rewrite_requirement(spec, dist="openenv", ref=REF) is None


@pytest.mark.parametrize(
    "spec", [PINNED, PINNED + " ; python_version < '3.12'", PINNED.replace("[core]", "[core,cli]")]
)
def test_rewrite_requirement_leaves_the_pinned_form(spec: str) -> None:
    assert rewrite_requirement(spec, dist="openenv", ref=REF) is None


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("openenv[core]<0.2.2", "spec <0.2.2 would install a PyPI release"),
        ("openenv[core]>=0.2.1,<0.2.2", "spec <0.2.2,>=0.2.1 would install a PyPI release"),
        ("openenv-core[core]>=0.2.0,<1.0", "spec <1.0,>=0.2.0 would install a PyPI release"),
        ("openenv<=0.3,>=0.2", "would install a PyPI release"),
        ("openenv==0.3.0", "spec ==0.3.0 would install a PyPI release"),
        ("openenv~=0.2.2", "spec ~=0.2.2 would install a PyPI release"),
        ("openenv", "an unversioned OpenEnv spec"),
        ("openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.2.2", "at v0.2.2"),
        (
            "openenv @ git+https://github.com/meta-pytorch/OpenEnv.git@8d4ed80b245516d479321c3b",
            "at 8d4ed80b245516d479321c3b, not the release's ref",
        ),
        ("git+https://github.com/huggingface/OpenEnv.git@v0.3.0", "at v0.3.0"),
        (
            "openenv @ git+https://github.com/someone/OpenEnv-fork.git",
            "URL git+https://github.com/someone/OpenEnv-fork.git is not OpenEnv",
        ),
        ("openenv @ file:///src/OpenEnv", "URL file:///src/OpenEnv is not OpenEnv"),
        ("openenv @ git+https://github.com/huggingface/OpenEnv.git", "follows a moving branch"),
    ],
)
def test_rewrite_requirement_pins_every_spec_and_says_what_it_was(spec: str, why: str) -> None:
    """Bounds, exact versions and URLs elsewhere are pinned too, each with its reason."""
    assert rewrite_requirement(spec, dist="openenv", ref=REF) == PINNED
    assert why in why_pinned(spec, REF)
    assert why_pinned(spec, REF).endswith(f"pinned to {REF}")


def test_why_pinned_names_a_pin_the_tool_wrote() -> None:
    assert "a pin openenv-release wrote" in why_pinned("openenv<0.2.2", REF, tool_pin=True)


def test_rewrite_requirement_is_idempotent_at_main() -> None:
    pinned = rewrite_requirement("openenv>=0.2", dist="openenv", ref="main")
    assert pinned is not None
    assert rewrite_requirement(pinned, dist="openenv", ref="main") is None


# rewrite_pyproject


def test_rewrite_pyproject_golden() -> None:
    text = (GOLDEN / "pyproject_mixed.toml").read_text()
    new, changes = rewrite_pyproject(text, path="envs/demo/pyproject.toml", dist="openenv", ref=REF)
    check_golden("pyproject_mixed.toml", new, changes)


def test_rewrite_pyproject_grid_world_golden() -> None:
    """The real grid_world_env pyproject: its tool.uv.sources path entry is removed."""
    text = (GOLDEN / "grid_world_env.toml").read_text()
    new, changes = rewrite_pyproject(
        text, path="envs/grid_world_env/pyproject.toml", dist="openenv", ref=REF
    )
    check_golden("grid_world_env.toml", new, changes)


def test_rewrite_pyproject_records_lines_and_replaces_path_source() -> None:
    text = (GOLDEN / "pyproject_mixed.toml").read_text()
    new, changes = rewrite_pyproject(text, path="p.toml", dist="openenv", ref=REF)
    lines = text.splitlines()
    for change in changes:
        assert change.line is not None
        assert change.before in lines[change.line - 1]
    assert changes[-1].before == 'openenv = { path = "../../", editable = true }'
    assert changes[-1].after == f'openenv = {{git = "{GIT_REPO}", rev = "{REF}"}}'
    assert 'openenv = { path = "../../"' not in new
    assert 'fastapi = { git = "https://github.com/fastapi/fastapi" }' in new
    # The commented-out dependency and the literal-string quoting survive.
    assert '    # "openenv[core] @ git+https://github.com/huggingface/OpenEnv.git",' in new
    assert f"    '{PINNED}',\n" in new


def test_rewrite_pyproject_without_openenv_is_byte_identical() -> None:
    text = '[project]\nname = "x"\ndependencies = ["fastapi>=1",   # c\n]\n\n[tool.x]\na=1\n'
    assert rewrite_pyproject(text, path="p", dist="openenv", ref=REF) == (text, [])


def test_rewrite_pyproject_never_touches_the_project_itself() -> None:
    text = (
        '[project]\nname = "openenv"\nversion = "0.3.2.dev0"\n'
        '[project.optional-dependencies]\nall = ["openenv[core]", "openenv[cli]"]\n'
    )
    assert rewrite_pyproject(text, path="pyproject.toml", dist="openenv", ref=REF) == (text, [])
    assert find_openenv_requirements(text) == []


def test_rewrite_pyproject_same_spec_twice_gets_both_lines() -> None:
    text = (
        '[project]\nname = "x"\ndependencies = [\n  "openenv>=0.2",\n]\n'
        '[dependency-groups]\ndev = [\n  "openenv>=0.2",\n]\n'
    )
    _, changes = rewrite_pyproject(text, path="p", dist="openenv", ref=REF)
    assert [c.line for c in changes] == [4, 8]


def test_rewrite_pyproject_invalid_toml_names_path_and_line() -> None:
    text = '[project]\nname = "x"\ndependencies = [\n  "openenv>=0.2"\n  "x"\n]\n'
    with pytest.raises(StageError) as caught:
        rewrite_pyproject(text, path="envs/bad/pyproject.toml", dist="openenv", ref=REF)
    assert caught.value.message.startswith("envs/bad/pyproject.toml:5: not valid TOML (")
    assert caught.value.remedy == "fix the file in the checkout"


def test_rewrite_pyproject_unparseable_openenv_spec_is_an_error() -> None:
    text = '[project]\nname = "x"\ndependencies = [\n  "openenv[core>=0.2",\n]\n'
    with pytest.raises(StageError, match=r"^envs/e/pyproject.toml:4: cannot parse OpenEnv"):
        rewrite_pyproject(text, path="envs/e/pyproject.toml", dist="openenv", ref=REF)


def test_rewrite_pyproject_unparseable_other_spec_is_left_alone() -> None:
    text = '[project]\nname = "x"\ndependencies = ["not a ( spec", "openenv>=0.2"]\n'
    new, changes = rewrite_pyproject(text, path="p", dist="openenv", ref=REF)
    assert '"not a ( spec"' in new
    assert len(changes) == 1


# find_openenv_requirements


def test_find_openenv_requirements_lists_pinned_and_loose() -> None:
    text = (GOLDEN / "pyproject_mixed.toml").read_text()
    found = find_openenv_requirements(text)
    assert "openenv[core]>=0.2.2" in found
    assert "openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.2.2" in found
    assert "openenv_core>=0.2.0" in found
    assert "fastapi>=0.115.0" not in found
    assert len(found) == 11


def test_find_openenv_requirements_after_rewrite_has_no_loose_spec() -> None:
    text = (GOLDEN / "pyproject_mixed.toml").read_text()
    new, _ = rewrite_pyproject(text, path="p", dist="openenv", ref=REF)
    for spec in find_openenv_requirements(new):
        assert rewrite_requirement(spec, dist="openenv", ref=REF) is None


# rewrite_requirements_txt


def test_rewrite_requirements_txt_golden() -> None:
    text = (GOLDEN / "requirements_mixed.txt").read_text()
    new, changes = rewrite_requirements_txt(text, path="requirements.txt", dist="openenv", ref=REF)
    check_golden("requirements_mixed.txt", new, changes)


def test_rewrite_requirements_txt_keeps_crlf_and_missing_final_newline() -> None:
    text = "fastapi\r\nopenenv>=0.2.0\r\n# c\r\nrequests"
    new, changes = rewrite_requirements_txt(text, path="r.txt", dist="openenv", ref=REF)
    assert new == f"fastapi\r\n{PINNED}\r\n# c\r\nrequests"
    assert changes == [Change("r.txt", 2, "openenv>=0.2.0", PINNED, changes[0].why)]


def test_rewrite_requirements_txt_without_openenv_is_identical() -> None:
    text = "fastapi>=0.110.0\n-r other.txt\n\n# openenv>=0.2 is commented out\n"
    assert rewrite_requirements_txt(text, path="r", dist="openenv", ref=REF) == (text, [])


def test_rewrite_requirements_txt_unparseable_openenv_line_names_line() -> None:
    with pytest.raises(StageError, match=r"^r.txt:2: cannot parse OpenEnv requirement"):
        rewrite_requirements_txt("x\nopenenv>=${V}\n", path="r.txt", dist="openenv", ref=REF)


def test_rewrite_requirements_txt_continued_editable_and_archive_golden() -> None:
    text = (GOLDEN / "requirements_hashed.txt").read_text()
    new, changes = rewrite_requirements_txt(text, path="requirements.txt", dist="openenv", ref=REF)
    check_golden("requirements_hashed.txt", new, changes)
    assert "--hash" not in new


@pytest.mark.parametrize(
    ("text", "mode_line"),
    [
        ("fastapi==0.110.0 \\\n    --hash=sha256:0000\nopenenv-core==0.2.1 --hash=sha256:1\n", 1),
        ("--require-hashes\nopenenv-core==0.2.1\n", 1),
    ],
)
def test_rewrite_requirements_txt_in_hash_checking_mode_is_an_error(
    text: str, mode_line: int
) -> None:
    """pip cannot hash a git URL, and refuses unhashed lines beside hashed ones."""
    with pytest.raises(StageError) as raised:
        rewrite_requirements_txt(text, path="r.txt", dist="openenv", ref=REF)
    line = text.split("\n").index(next(x for x in text.split("\n") if "openenv" in x)) + 1
    assert str(raised.value).startswith(f"r.txt:{line}: pins 'openenv-core==0.2.1' to the ")
    assert f"line {mode_line} puts pip in hash-checking mode" in str(raised.value)


def test_rewrite_requirements_txt_drops_openenv_from_a_constraints_file() -> None:
    text = "fastapi==0.110.0\nopenenv-core==0.2.1  # pinned\nuvicorn\n"
    new, changes = rewrite_requirements_txt(
        text, path="c.txt", dist="openenv", ref=REF, constraints=True
    )
    assert new == "fastapi==0.110.0\nuvicorn\n"
    assert changes == [Change("c.txt", 2, "openenv-core==0.2.1", "", CONSTRAINT_DROPPED)]


# rewrite_shell_command


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            'RUN pip install --no-cache-dir "openenv[core]>=0.2.2" && \\\n'
            "    pip install --no-cache-dir ./envs/coding_env/",
            f'RUN pip install --no-cache-dir "{PINNED}" && \\\n'
            "    pip install --no-cache-dir ./envs/coding_env/",
        ),
        (
            "RUN pip install --no-cache-dir git+https://github.com/huggingface/OpenEnv.git",
            f'RUN pip install --no-cache-dir "{PINNED}"',
        ),
        (
            'pip install --no-cache-dir --no-deps "openenv-core[core]>=0.2.2" && \\\n'
            '    pip install --no-cache-dir fastapi "beartype>=0.17.2"',
            f'pip install --no-cache-dir --no-deps "{PINNED}" && \\\n'
            '    pip install --no-cache-dir fastapi "beartype>=0.17.2"',
        ),
        (
            "uv pip install --system 'openenv>=0.2' -r requirements.txt",
            f"uv pip install --system '{PINNED}' -r requirements.txt",
        ),
        ("pip3 install openenv[core]", f'pip3 install "{PINNED}"'),
        (
            "python -m pip install \"openenv>=0.2; python_version>'3'\"",
            f"python -m pip install \"{PINNED} ; python_version>'3'\"",
        ),
    ],
)
def test_rewrite_shell_command_pins(command: str, expected: str) -> None:
    new, changes = rewrite_shell_command(
        command, path="Dockerfile", line=7, dist="openenv", ref=REF
    )
    assert new == expected
    assert len(changes) == 1
    assert changes[0].after.startswith(PINNED)


@pytest.mark.parametrize(
    "command",
    [
        "pip install -e git+https://github.com/huggingface/OpenEnv.git@v0.1.0#egg=openenv-core",
        "pip install --editable=git+https://github.com/meta-pytorch/OpenEnv@v0.1.0#egg=openenv",
        "pip install 'git+https://github.com/huggingface/OpenEnv.git@v0.1.0#subdirectory=src'",
        "pip install https://files.pythonhosted.org/p/openenv_core-0.2.1-py3-none-any.whl",
    ],
)
def test_rewrite_shell_command_pins_editable_subdirectory_and_archives(command: str) -> None:
    new, changes = rewrite_shell_command(command, path="D", line=1, dist="openenv", ref=REF)
    assert new.replace("'", '"') == f'pip install "{PINNED}"'
    assert [c.before for c in changes] == [command.removeprefix("pip install ").strip("'")]


@pytest.mark.parametrize(
    "command",
    [
        "pip install --no-cache-dir -e .",
        "pip install -r requirements.txt fastapi 'uvicorn>=0.24'",
        "echo openenv>=0.2 && apt-get install -y openenv",
        f"pip install '{PINNED}'",
        "uv sync --frozen  # then pip install openenv>=0.2",
    ],
)
def test_rewrite_shell_command_leaves_other_commands(command: str) -> None:
    assert rewrite_shell_command(command, path="D", line=1, dist="openenv", ref=REF) == (
        command,
        [],
    )


def test_rewrite_shell_command_records_the_line_of_each_word() -> None:
    command = (
        "RUN apt-get update && \\\n"
        "    # a comment line\n"
        "    pip install fastapi \\\n"
        "        'openenv>=0.2' && \\\n"
        "    pip install git+https://github.com/meta-pytorch/OpenEnv@main\n"
    )
    new, changes = rewrite_shell_command(command, path="D", line=10, dist="openenv", ref=REF)
    assert [(c.line, c.before) for c in changes] == [
        (13, "openenv>=0.2"),
        (14, "git+https://github.com/meta-pytorch/OpenEnv@main"),
    ]
    assert new == (
        "RUN apt-get update && \\\n"
        "    # a comment line\n"
        "    pip install fastapi \\\n"
        f"        '{PINNED}' && \\\n"
        f'    pip install "{PINNED}"\n'
    )


def test_rewrite_shell_command_unparseable_openenv_spec_is_an_error() -> None:
    with pytest.raises(StageError, match=r"^envs/x/Dockerfile:4: cannot parse"):
        rewrite_shell_command(
            'RUN pip install "openenv>=${VERSION}"',
            path="envs/x/Dockerfile",
            line=4,
            dist="openenv",
            ref=REF,
        )


def test_rewrite_pyproject_uv_override_dev_and_constraint_dependencies() -> None:
    text = (
        '[project]\nname = "demo"\nversion = "0"\n\n[tool.uv]\n'
        'override-dependencies = ["openenv-core>=0.2"]\n'
        'dev-dependencies = ["pytest", "openenv[cli]"]\n'
        'constraint-dependencies = ["fastapi<1", "openenv-core==0.2.1"]\n'
    )
    new, changes = rewrite_pyproject(text, path="pyproject.toml", dist="openenv", ref=REF)
    uv = tomllib.loads(new)["tool"]["uv"]
    assert uv["override-dependencies"] == [PINNED]
    assert uv["dev-dependencies"] == ["pytest", f"openenv[core,cli] @ {PINNED.split(' @ ')[1]}"]
    assert uv["constraint-dependencies"] == ["fastapi<1"]
    assert Change("pyproject.toml", 8, "openenv-core==0.2.1", "", CONSTRAINT_DROPPED) in changes


def test_rewrite_pyproject_poetry_dependency_becomes_a_git_dependency_at_the_ref() -> None:
    text = (
        '[tool.poetry.dependencies]\npython = "^3.11"\nopenenv-core = "^0.2.0"\n\n'
        '[tool.poetry.group.dev.dependencies]\nopenenv = {version = "*", extras = ["cli"]}\n'
    )
    new, changes = rewrite_pyproject(text, path="pyproject.toml", dist="openenv", ref=REF)
    poetry = tomllib.loads(new)["tool"]["poetry"]
    git = "https://github.com/huggingface/OpenEnv.git"
    assert poetry["dependencies"]["openenv-core"] == {"git": git, "rev": REF, "extras": ["core"]}
    assert poetry["group"]["dev"]["dependencies"]["openenv"]["extras"] == ["core", "cli"]
    assert [c.before for c in changes] == [
        'openenv-core = "^0.2.0"',
        'openenv = {version = "*", extras = ["cli"]}',
    ]
    assert rewrite_pyproject(new, path="pyproject.toml", dist="openenv", ref=REF)[1] == []


@pytest.mark.parametrize(
    ("name", "text", "named"),
    [
        (
            "setup.py",
            'setup(name="x", install_requires=["fastapi", "openenv-core>=0.2"])',
            "openenv-core>=0.2",
        ),
        (
            "setup.cfg",
            "[options]\ninstall_requires =\n    fastapi\n    openenv[core]\n",
            "openenv[core]",
        ),
        ("setup.py", 'setup(name="x", install_requires=["fastapi"], url="openenv")', None),
    ],
)
def test_setup_requirement_finds_openenv_in_install_requires(
    name: str, text: str, named: str | None
) -> None:
    assert setup_requirement(name, text) == named


def test_staging_names_and_unmarks_a_requirements_pin_the_tool_wrote() -> None:
    text = "openenv>=0.2.0,<0.2.2  # the env  # openenv-release pin (was openenv>=0.2.0)\n"
    new, [change] = rewrite_requirements_txt(text, path="r.txt", dist="openenv", ref=REF)
    assert new == f"{PINNED}  # the env\n"
    assert "a pin openenv-release wrote" in change.why


@pytest.mark.parametrize(
    ("dockerfile", "named"),
    [
        (
            "FROM python:3.11-slim\nARG OE='openenv==0.2.1 ; python_version>\"3.10\"'\n"
            'RUN pip install "$OE"\n',
            "Dockerfile:2: cannot pin 'openenv==0.2.1 ; python_version>\"3.10\"'",
        ),
        (
            "FROM python:3.11-slim\nRUN uv run --with 'openenv[cli]==0.2.1' python x.py\n",
            "Dockerfile:2: cannot pin 'openenv[cli]==0.2.1' given to --with",
        ),
    ],
)
def test_an_openenv_spec_that_cannot_be_pinned_safely_fails_naming_it(
    dockerfile: str, named: str
) -> None:
    from releaselib.stage.staged_dockerfile import rewrite_for_space

    with pytest.raises(StageError) as exc:
        rewrite_for_space(dockerfile, path="Dockerfile", base_image="x:1", dist="openenv", ref="v1")
    assert exc.value.message.startswith(named)
