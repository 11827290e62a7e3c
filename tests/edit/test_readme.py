"""Tests for releaselib.edit.readme: the README Space card, its Hub checks and client discovery.

Golden files live in golden/readme/: ``<name>`` is the source README, ``<name>.expected`` the
card and ``<name>.changes.json`` the recorded changes. Set UPDATE_GOLDEN=1 to rewrite them.
"""

from __future__ import annotations

import dataclasses
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from huggingface_hub import SpaceCard
from huggingface_hub.repocard import REGEX_YAML_BLOCK, metadata_load

from releaselib.edit import front_matter
from releaselib.edit.front_matter import HUB_COLOURS, metadata_problems
from releaselib.edit.readme import SECTION_TITLE, build_space_readme, runtime_url, space_url
from releaselib.env_facts import find_client_class, package_name, read_app_port
from releaselib.errors import StageError
from releaselib.records import Change
from tests.helpers import assert_golden

GOLDEN = Path(__file__).parent / "golden" / "readme"
RELEASE: dict[str, Any] = {
    "space_id": "openenv/echo_env-0.2.2",
    "version": "0.2.2",
    "ref": "v0.2.2",
    "hub_tag": "openenv-hub",
}
# Golden input -> the env facts the caller would pass with it.
CASES: dict[str | None, dict[str, Any]] = {
    "hex_colours.md": {"env": "atari_env", "app_port": 8000, "client_class": "AtariEnv"},
    "no_front_matter.md": {"env": "chess_env", "app_port": 8000, "client_class": None},
    "grid_world.md": {"env": "grid_world_env", "app_port": 8000, "client_class": "GridWorldEnv"},
    "calendar.md": {
        "env": "calendar_env",
        "app_port": 8004,
        "client_class": "CalendarEnv",
        "import_package": "calendar_pkg",
    },
    "keeps_keys.md": {"env": "awm_env", "app_port": 8000, "client_class": None},
    "bom.md": {"env": "bom_env", "app_port": 8000, "client_class": None},
    None: {"env": "bare_env", "app_port": 8000, "client_class": None},
}


def build(source: str | None, **facts: Any) -> tuple[str, list[Change]]:
    merged = {**RELEASE, "env": "echo_env", "app_port": 8000, "client_class": "EchoEnv", **facts}
    return build_space_readme(source, path="README.md", **merged)


def card_of(text: str) -> dict[str, Any]:
    data: dict[str, Any] = SpaceCard(text).data.to_dict()
    return data


def check_golden(name: str, text: str, changes: list[Change]) -> None:
    assert_golden(GOLDEN / f"{name}.expected", text)
    as_json = json.dumps([dataclasses.asdict(c) for c in changes], indent=2, ensure_ascii=False)
    assert_golden(GOLDEN / f"{name}.changes.json", as_json + "\n")


def source_of(name: str | None) -> str | None:
    return None if name is None else (GOLDEN / name).read_text(encoding="utf-8")


def test_the_front_matter_split_is_the_hubs_own() -> None:
    """front_matter keeps a copy of huggingface_hub's split (importing repocard is slow)."""
    assert front_matter.REGEX_YAML_BLOCK.pattern == REGEX_YAML_BLOCK.pattern
    assert front_matter.REGEX_YAML_BLOCK.flags == REGEX_YAML_BLOCK.flags


# golden cards


@pytest.mark.parametrize("name", list(CASES), ids=lambda n: n or "no_readme")
def test_golden_card(name: str | None) -> None:
    text, changes = build(source_of(name), **CASES[name])
    check_golden(name or "no_readme.md", text, changes)


@pytest.mark.parametrize("name", list(CASES), ids=lambda n: n or "no_readme")
def test_every_golden_card_is_hub_valid(name: str | None) -> None:
    facts = CASES[name]
    text, _ = build(source_of(name), **facts)
    data = card_of(text)
    assert metadata_problems(text) == []
    assert data["sdk"] == "docker"
    assert data["app_port"] == facts["app_port"]
    assert {data["colorFrom"], data["colorTo"]} <= set(HUB_COLOURS)
    assert {"openenv", "openenv-hub", "openenv-0.2.2"} <= set(data["tags"])
    assert f'(base_url="{runtime_url(RELEASE["space_id"])}")' in text


# front matter


def test_keeps_every_other_key_and_value_in_source_order(tmp_path: Path) -> None:
    text, _ = build(source_of("keeps_keys.md"))
    (tmp_path / "README.md").write_text(text, encoding="utf-8")
    data = metadata_load(tmp_path / "README.md")
    assert data is not None
    assert data["title"] == "Agent World Model Environment Server "
    assert data["emoji"] == "🧪"
    assert data["pinned"] is False
    assert data["datasets"] == ["snorkelai/finqa-data"]
    assert data["base_path"] == "/web"
    assert list(data) == [
        "title",
        "emoji",
        "colorFrom",
        "colorTo",
        "sdk",
        "pinned",
        "app_port",
        "base_path",
        "short_description",
        "datasets",
        "tags",
    ]


def test_tags_keep_order_gain_missing_and_lose_duplicates() -> None:
    text, _ = build(source_of("keeps_keys.md"))
    assert card_of(text)["tags"] == [
        "openenv",
        "coding",
        "reinforcement-learning",
        "openenv-hub",
        "openenv-0.2.2",
    ]


def test_hub_tag_openenv_is_not_repeated() -> None:
    text, _ = build(None, hub_tag="openenv")
    assert card_of(text)["tags"] == ["openenv", "openenv-0.2.2"]


def test_a_single_string_tag_becomes_a_list() -> None:
    text, _ = build("---\ntitle: T\ntags: rl\n---\nbody\n")
    assert card_of(text)["tags"] == ["rl", "openenv", "openenv-hub", "openenv-0.2.2"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("blue", "blue"),
        ("'blue'", "blue"),
        ("Purple", "purple"),
        ("orange", "blue"),
        ("'#0084FF'", "blue"),
        ("12", "blue"),
    ],
)
def test_colour_from_is_made_hub_valid(given: str, expected: str) -> None:
    text, changes = build(f"---\ntitle: T\ncolorFrom: {given}\ncolorTo: red\n---\n")
    assert card_of(text)["colorFrom"] == expected
    recorded = [c.line for c in changes if c.after.startswith("colorFrom")]
    assert recorded == ([] if given.strip("'") == expected else [3])


def test_colour_change_is_recorded_with_before_after_and_line() -> None:
    _, changes = build(source_of("hex_colours.md"), env="atari_env")
    colours = [c for c in changes if c.after.startswith("color")]
    assert [(c.line, c.before, c.after) for c in colours] == [
        (4, "colorFrom: #FF6200", "colorFrom: blue"),
        (5, "colorTo: #D4151B", "colorTo: green"),
    ]


def test_app_port_comes_from_the_caller_not_the_readme() -> None:
    text, changes = build(source_of("hex_colours.md"), app_port=8004)
    assert card_of(text)["app_port"] == 8004
    [port] = [c for c in changes if c.after.startswith("app_port")]
    assert (port.line, port.before, port.after) == (8, "app_port: 8000", "app_port: 8004")


def test_base_path_is_kept_or_defaults_to_web() -> None:
    kept, _ = build(source_of("calendar.md"), app_port=8004)
    added, _ = build(source_of("grid_world.md"))
    assert card_of(kept)["base_path"] == "/docs"
    assert card_of(added)["base_path"] == "/web"


def test_missing_title_and_sdk_are_set() -> None:
    text, changes = build("---\nsdk: gradio\n---\nbody\n", env="x_env")
    data = card_of(text)
    assert (data["title"], data["sdk"]) == ("x_env Environment", "docker")
    [sdk] = [c for c in changes if c.after.startswith("sdk")]
    assert (sdk.line, sdk.before, sdk.after) == (2, "sdk: gradio", "sdk: docker")


def test_long_short_description_is_cut_to_the_hub_limit() -> None:
    text, changes = build(source_of("keeps_keys.md"))
    short = card_of(text)["short_description"]
    assert len(short) == 60
    assert short.endswith("…")
    assert any(c.line == 10 and c.after.startswith("short_description") for c in changes)


def test_sixty_character_short_description_is_kept() -> None:
    sixty = "x" * 60
    text, changes = build(f"---\ntitle: T\nshort_description: {sixty}\n---\n")
    assert card_of(text)["short_description"] == sixty
    assert not any("short_description" in c.after for c in changes)


def test_no_front_matter_generates_one_and_records_it_once() -> None:
    text, changes = build(source_of("no_front_matter.md"), env="chess_env")
    assert card_of(text) == {
        "title": "chess_env Environment",
        "colorFrom": "blue",
        "colorTo": "green",
        "sdk": "docker",
        "app_port": 8000,
        "base_path": "/web",
        "tags": ["openenv", "openenv-hub", "openenv-0.2.2"],
    }
    assert [(c.line, c.why) for c in changes] == [
        (1, "README had no front matter"),
        (None, "release facts and client snippet"),
    ]


def test_no_readme_gets_a_title_heading() -> None:
    text, _ = build(None, env="bare_env")
    assert "\n# bare_env Environment\n" in text
    assert text.endswith("```\n")


def test_empty_front_matter_block_is_filled() -> None:
    text, _ = build("---\n\n---\n# Body\n", env="x_env")
    assert card_of(text)["title"] == "x_env Environment"
    assert metadata_problems(text) == []


# body


def test_body_is_kept_verbatim_after_the_deployment_section() -> None:
    source = source_of("grid_world.md")
    assert source is not None
    text, _ = build(source)
    body = source.split("---\n\n", 1)[1]
    assert text.endswith(body)
    assert text.index(SECTION_TITLE) < text.index("# Grid World Environment")
    assert card_of(text)["title"] == "Grid World Env"


def test_template_syntax_in_the_body_is_not_rendered() -> None:
    text, _ = build(source_of("calendar.md"), app_port=8004)
    assert "{{ not_a_variable }} {% raw %} {# x #}\n" in text


def test_missing_trailing_newline_is_added() -> None:
    source = source_of("calendar.md")
    assert source is not None and not source.endswith("\n")
    text, _ = build(source, app_port=8004)
    assert text.endswith("{# x #}\n")


def test_crlf_source_gives_the_lf_card_and_records_it() -> None:
    source = source_of("hex_colours.md")
    assert source is not None
    lf_text, lf_changes = build(source)
    crlf_text, crlf_changes = build(source.replace("\n", "\r\n"))
    assert crlf_text == lf_text
    assert crlf_changes[0] == Change("README.md", None, "CRLF", "LF", crlf_changes[0].why)
    assert crlf_changes[1:] == lf_changes


def test_connecting_from_code_names_the_client_and_package() -> None:
    text, _ = build(None, client_class="CalendarEnv", import_package="calendar_pkg")
    assert "### Connecting from code" in text
    assert "from calendar_pkg import CalendarEnv\n" in text
    assert 'with CalendarEnv(base_url="https://openenv-echo-env-0-2-2.hf.space").sync()' in text


def test_connecting_from_code_defaults_to_the_env_package_and_generic_client() -> None:
    named, _ = build(None, env="echo_env", client_class="EchoEnv")
    generic, _ = build(None, client_class=None)
    assert "from echo_env import EchoEnv\n" in named
    assert "from openenv.core import GenericEnvClient\n" in generic


def test_section_links_the_space_page_and_ref() -> None:
    text, _ = build(None)
    assert "(https://huggingface.co/spaces/openenv/echo_env-0.2.2)" in text
    assert "ref `v0.2.2`" in text


# malformed sources


@pytest.mark.parametrize(
    "source", ["---\ntitle: T\nsdk: docker\n", "---\n", "---", "\n---\ntitle: T\n# body\n"]
)
def test_unterminated_front_matter_is_a_stage_error(source: str) -> None:
    with pytest.raises(StageError) as raised:
        build_space_readme(
            source, path="envs/x/README.md", env="x", **RELEASE, app_port=8000, client_class=None
        )
    assert raised.value.message.startswith("envs/x/README.md:")
    assert raised.value.message.endswith(": front matter is not terminated")
    assert raised.value.remedy


def test_unterminated_front_matter_names_line_one() -> None:
    with pytest.raises(StageError, match=r"^README\.md:1: front matter is not terminated; "):
        build("---\ntitle: T\n")


@pytest.mark.parametrize(
    ("source", "line"),
    [("---\ntitle: T\ntags: [a\n---\n", 3), ("---\n- a\n- b\n---\n", 2), ("---\nx\n---\n", 2)],
)
def test_front_matter_that_is_not_a_yaml_mapping_is_a_stage_error(source: str, line: int) -> None:
    with pytest.raises(StageError, match=rf"^README\.md:{line}: front matter is not"):
        build(source)


# metadata_problems


VALID = "---\ntitle: T\nsdk: docker\napp_port: 8000\ncolorFrom: red\ncolorTo: 'gray'\n---\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (VALID, []),
        (
            "# no front matter\n",
            [(1, "README has no front matter (a YAML block between '---' lines)")],
        ),
        ("---\ntitle: T\n", [(1, "front matter is not terminated")]),
        (VALID.replace("sdk: docker", "sdk: gradio"), [(3, "sdk must be docker, got 'gradio'")]),
        (VALID.replace("app_port: 8000\n", ""), [(None, "app_port is missing")]),
        (VALID.replace("title: T\n", ""), [(None, "title is missing")]),
        (
            VALID.replace("colorFrom: red", "colorFrom: '#FF6200'"),
            [(5, "colorFrom '#FF6200' is not one of " + ", ".join(HUB_COLOURS))],
        ),
        (
            VALID.replace("colorTo: 'gray'", "colorTo: grey"),
            [(6, "colorTo 'grey' is not one of " + ", ".join(HUB_COLOURS))],
        ),
    ],
)
def test_metadata_problems(text: str, expected: list[tuple[int | None, str]]) -> None:
    assert metadata_problems(text) == expected


@pytest.mark.parametrize("port", ["'8000'", "0", "65536", "true", "8000.0", "null"])
def test_app_port_must_be_an_int_in_range(port: str) -> None:
    problems = metadata_problems(VALID.replace("app_port: 8000", f"app_port: {port}"))
    assert [line for line, _ in problems] == [4]
    assert problems[0][1].startswith("app_port must be an integer 1-65535")


@pytest.mark.parametrize(("length", "refused"), [(60, False), (61, True)])
def test_short_description_limit(length: int, refused: bool) -> None:
    text = VALID.replace("title: T", f"title: T\nshort_description: {'d' * length}")
    assert bool(metadata_problems(text)) is refused


@pytest.mark.parametrize("tags", ["openenv", "[openenv, 3]", "{a: b}"])
def test_tags_must_be_a_list_of_strings(tags: str) -> None:
    text = VALID.replace("title: T", f"title: T\ntags: {tags}")
    assert metadata_problems(text) == [(3, "tags must be a list of strings")]


def test_problem_lines_count_leading_blank_lines_and_crlf() -> None:
    text = "\r\n\r\n" + VALID.replace("sdk: docker", "sdk: static").replace("\n", "\r\n")
    assert metadata_problems(text) == [(5, "sdk must be docker, got 'static'")]


def test_invalid_yaml_is_reported_with_its_line() -> None:
    [(line, message)] = metadata_problems("---\ntitle: T\ntags: [a\n---\n")
    assert line == 3
    assert message.startswith("front matter is not valid YAML")


# URLs


@pytest.mark.parametrize(
    ("space_id", "url"),
    [
        ("openenv/echo_env-0.2.2", "https://openenv-echo-env-0-2-2.hf.space"),
        ("OpenEnv/Sudoku", "https://openenv-sudoku.hf.space"),
        ("alice/repl", "https://alice-repl.hf.space"),
    ],
)
def test_runtime_url(space_id: str, url: str) -> None:
    assert runtime_url(space_id) == url


@pytest.mark.parametrize("space_id", ["echo_env", "a/b/c", "a/", "/b"])
def test_runtime_url_rejects_a_bad_space_id(space_id: str) -> None:
    with pytest.raises(ValueError):
        runtime_url(space_id)


def test_space_url() -> None:
    assert space_url("openenv/echo_env-0.2.2") == (
        "https://huggingface.co/spaces/openenv/echo_env-0.2.2"
    )


# read_app_port


@pytest.mark.parametrize(
    ("yaml_text", "port"),
    [(None, 8000), ("", 8000), ("name: x\n", 8000), ("spec_version: 1\nport: 8004\n", 8004)],
)
def test_read_app_port(tmp_path: Path, yaml_text: str | None, port: int) -> None:
    if yaml_text is not None:
        (tmp_path / "openenv.yaml").write_text(yaml_text)
    assert read_app_port(tmp_path) == port


def test_a_readme_with_a_bom_keeps_its_front_matter() -> None:
    source = source_of("bom.md")
    assert source is not None and source.startswith("\ufeff---")
    text, changes = build(source, env="bom_env", client_class=None)
    assert not text.startswith("\ufeff")
    data = card_of(text)
    assert data["title"] == "BOM Environment" and "written-on-windows" in data["tags"]
    assert text.count("---\n") >= 2 and "\ufeff" not in text
    assert changes[0].before == "UTF-8 BOM"


def env_with(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


README_8004 = "---\ntitle: x\napp_port: 8004\n---\n# x\n"
CMD_8004 = 'FROM python:3.11-slim\nCMD ["uvicorn", "app:app", "--port", "8004"]\n'


@pytest.mark.parametrize(
    ("files", "port"),
    [
        ({}, 8000),
        ({"README.md": README_8004}, 8004),
        ({"server/Dockerfile": CMD_8004}, 8004),
        ({"Dockerfile": "FROM x\nCMD uvicorn app:app --port ${PORT:-8010}\n"}, 8010),
        (
            {
                "openenv.yaml": "port: 8004\n",
                "README.md": README_8004,
                "server/Dockerfile": CMD_8004,
            },
            8004,
        ),
        ({"README.md": "\ufeff" + README_8004}, 8004),
        ({"openenv.yaml": 'port: "8004"\n'}, 8004),
        (
            {
                "Dockerfile": "FROM x\nENV PORT=7860\n"
                'CMD ["sh", "-c", "uvicorn app:app --host 0.0.0.0 --port $PORT"]\n'
            },
            7860,
        ),
        ({"Dockerfile": "FROM x\nENV PORT=7861\nCMD uvicorn app:app --port ${PORT}\n"}, 7861),
        (
            {"Dockerfile": 'FROM x\nENTRYPOINT ["uvicorn", "app:app"]\nCMD ["--port", "8004"]\n'},
            8004,
        ),
        ({"Dockerfile": 'FROM x\nCMD ["gunicorn", "-b", "0.0.0.0:7860", "app:app"]\n'}, 7860),
        ({"Dockerfile": "FROM x\nCMD gunicorn --bind=:7862 app:app\n"}, 7862),
    ],
)
def test_app_port_precedence(tmp_path: Path, files: dict[str, str], port: int) -> None:
    """openenv.yaml, else the README front matter, else the CMD's --port, else 8000."""
    assert read_app_port(env_with(tmp_path, files)) == port


@pytest.mark.parametrize(
    ("files", "named"),
    [
        (
            {"openenv.yaml": "port: 8000\n", "README.md": README_8004},
            "openenv.yaml port 8000 disagrees with README.md app_port 8004",
        ),
        (
            {"README.md": README_8004, "server/Dockerfile": CMD_8004.replace("8004", "8000")},
            "README.md app_port 8004 disagrees with Dockerfile CMD --port 8000",
        ),
        (
            {"openenv.yaml": "port: 8004\n", "Dockerfile": CMD_8004.replace("8004", "9000")},
            "openenv.yaml port 8004 disagrees with Dockerfile CMD --port 9000",
        ),
    ],
)
def test_app_ports_that_disagree_fail_the_env_naming_both(
    tmp_path: Path, files: dict[str, str], named: str
) -> None:
    with pytest.raises(StageError) as raised:
        read_app_port(env_with(tmp_path, files))
    assert named in raised.value.one_line() and "\n" not in raised.value.one_line()


@pytest.mark.parametrize("yaml_text", ["name: [x\n", "port: eighty\n", "- port: 1\n", "port: 0\n"])
def test_read_app_port_refuses_a_bad_file_naming_it(tmp_path: Path, yaml_text: str) -> None:
    (tmp_path / "openenv.yaml").write_text(yaml_text)
    with pytest.raises(StageError, match=r"openenv\.yaml") as raised:
        read_app_port(tmp_path)
    assert str(tmp_path / "openenv.yaml") in raised.value.message


@pytest.mark.parametrize("port", ['"80a"', "eighty", "0", "70000"])
def test_a_readme_app_port_that_is_not_a_port_fails_naming_file_and_value(tmp_path: Path, port: str) -> None:
    env_with(tmp_path, {"README.md": f"---\ntitle: x\napp_port: {port}\n---\n"})
    with pytest.raises(StageError) as raised:
        read_app_port(tmp_path, "envs/x_env")
    line = raised.value.one_line()
    assert line.startswith(f"envs/x_env/README.md: app_port {port.strip(chr(34))}") and "is not a port" in line, line


# find_client_class, package_name


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


ECHO_CLIENT = """\
import sys
from openenv.core.env_client import EnvClient
from .models import EchoAction, EchoObservation

raise SystemExit("read, never run")

class Helper:
    pass

class EchoEnv(EnvClient[EchoAction, EchoObservation, State]):
    pass
"""


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"client.py": ECHO_CLIENT}, "EchoEnv"),
        ({"client.py": "import core\nclass FinQAEnv(core.MCPToolClient):\n    pass\n"}, "FinQAEnv"),
        (
            {"client.py": "class _Base(HTTPEnvClient): ...\nclass GameEnv(_Base): ...\n"},
            "GameEnv",
        ),
        (
            {
                "client.py": "class BaseClient(EnvClient): ...\nclass ChessEnv(BaseClient): ...\n",
                "__init__.py": "from .client import ChessEnv\n",
            },
            "ChessEnv",
        ),
        (
            {
                "__init__.py": "from .models import A\nfrom .remote import FooEnv\n",
                "remote.py": "class FooEnv(GenericEnvClient): ...\n",
                "models.py": "class A: ...\n",
            },
            "FooEnv",
        ),
        ({"__init__.py": "class InlineEnv(EnvClient): ...\n"}, "InlineEnv"),
        (
            {
                "client.py": "def broken(:\n",
                "__init__.py": "from .sub import SubEnv\n",
                "sub/__init__.py": "class SubEnv(EnvClient): ...\n",
            },
            "SubEnv",
        ),
        ({"client.py": "class Env(object): ...\nclass Other(Env): ...\n"}, None),
        ({"client.py": "class Late(Base): ...\nclass Base(EnvClient): ...\n"}, "Base"),
        ({"server/client.py": "class Deep(EnvClient): ...\n"}, None),
        ({}, None),
    ],
)
def test_find_client_class(tmp_path: Path, files: dict[str, str], expected: str | None) -> None:
    assert find_client_class(write_tree(tmp_path, files)) == expected


@pytest.mark.parametrize(
    ("pyproject", "expected"),
    [
        (
            '[tool.setuptools]\npackage-dir = { "echo_env" = ".", "echo_env.server" = "server" }\n',
            "echo_env",
        ),
        (
            '[tool.setuptools.package-dir]\n"awm_env.server" = "server"\n"awm_env" = "."\n',
            "awm_env",
        ),
        ('[project]\nname = "openenv-echo-env"\n', None),
        ("not toml = = \n", None),
        (None, None),
    ],
)
def test_package_name(tmp_path: Path, pyproject: str | None, expected: str | None) -> None:
    if pyproject is not None:
        (tmp_path / "pyproject.toml").write_text(pyproject)
    assert package_name(tmp_path) == expected


def test_template_ships_inside_the_package() -> None:
    template = resources.files("releaselib") / "templates" / "space_readme.md.j2"
    assert template.is_file()
    assert "Connecting from code" in template.read_text(encoding="utf-8")
