"""The parsed Dockerfile model: parse errors, stages, ENV evaluation, COPYs, CMD, edits."""

from __future__ import annotations

import pytest

from releaselib.dockerfile_syntax.words import expand
from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.errors import StageError

TWO_STAGES = """\
# comment stays
ARG BASE_IMAGE=ghcr.io/huggingface/openenv-base:latest
ARG TAG
FROM ${BASE_IMAGE} AS builder
WORKDIR /app
WORKDIR env
COPY . /app/env
COPY pyproject.toml uv.lock ./

FROM --platform=linux/amd64 python:3.11-slim
ARG TAG=v1
COPY --from=builder /app/env /app/env
ENV HOME /root dir
ENV A=1 \\
  # a comment inside the continuation
  B="two words" \\
  PATH="/app/.venv/bin:$PATH"
ENV C=${A}-${MISSING:-fallback}-${A:+set}-$TAG
CMD uvicorn server.app:app
"""


def parse(text: str = TWO_STAGES) -> Dockerfile:
    return Dockerfile.parse(text, "envs/x/server/Dockerfile")


# -- parsing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ("FROM x\nRUN a\nENV A\nRUN b\n", ":3:", "ENV must have two arguments"),
        ("FROM x\nFOO bar\n", ":2:", "unknown instruction FOO"),
        ("ARG A=1\n", ":1:", "no FROM instruction"),
        ("RUN echo\nFROM x\n", ":1:", "RUN before the first FROM"),
        ("FROM x\nFROM\n", ":2:", "FROM names no image"),
    ],
)
def test_parse_errors_name_path_line_and_remedy(text: str, where: str, problem: str) -> None:
    with pytest.raises(StageError) as info:
        parse(text)
    message = str(info.value)
    assert message.startswith("envs/x/server/Dockerfile" + where), message
    assert problem in message
    assert info.value.remedy


def test_stages_and_instructions() -> None:
    df = parse()
    assert [(s.index, s.name, s.base) for s in df.stages] == [
        (0, "builder", "${BASE_IMAGE}"),
        (1, None, "python:3.11-slim"),
    ]
    assert df.final_stage.first.flags == ("--platform=linux/amd64",)
    assert df.final_stage.last.cmd == "CMD"
    assert [i.stage for i in df.instructions[:3]] == [None, None, 0]
    assert df.stage("builder") == df.stages[0]
    assert df.parent(1) is None
    env_instr = next(i for i in df.instructions if i.value[:1] == ("A",))
    assert (env_instr.start_line, env_instr.end_line) == (14, 17)
    assert env_instr.text.startswith("ENV A=1 \\\n  # a comment")


def test_args_and_resolved_base() -> None:
    df = parse()
    assert df.args() == {"BASE_IMAGE": "ghcr.io/huggingface/openenv-base:latest", "TAG": None}
    assert df.resolved_base(0) == "ghcr.io/huggingface/openenv-base:latest"


def test_stage_env_evaluates_in_order_with_expansion() -> None:
    env = parse().stage_env(base_env={"PATH": "/usr/bin"})
    assert env == {
        "PATH": "/app/.venv/bin:/usr/bin",
        "HOME": "/root dir",
        "A": "1",
        "B": "two words",
        "C": "1-fallback-set-v1",
    }


def test_stage_env_default_seed_depends_on_the_base() -> None:
    df = parse(
        "ARG BASE_IMAGE=ghcr.io/huggingface/openenv-base:latest\n"
        "FROM ${BASE_IMAGE} AS builder\nENV PYTHONPATH=/app/env:$PYTHONPATH\n"
        "FROM builder AS again\nENV X=1\n"
        "FROM python:3.11-slim\nENV PYTHONPATH=/app/env:$PYTHONPATH\n"
    )
    assert df.stage_env(0)["PYTHONPATH"] == "/app/env:/app/src"
    assert df.stage_env("again") == {"PYTHONPATH": "/app/env:/app/src", "X": "1"}
    assert df.stage_env()["PYTHONPATH"] == "/app/env:"


def test_all_instructions_of_one_env_share_one_expansion_scope() -> None:
    env = parse("FROM x\nENV A=1\nENV A=2 B=$A\n").stage_env(base_env={})
    assert env == {"A": "2", "B": "1"}  # Docker: B sees A as it was before this ENV


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("plain", "plain"),
        ("'$A single'", "$A single"),
        ('"$A double"', "x double"),
        (r"\$A", "$A"),
        ("${A}b", "xb"),
        ("${NONE:-d}", "d"),
        ("${EMPTY:-d}/${EMPTY-d}", "d/"),
        ("${A:+alt}${NONE:+alt}", "alt"),
        ("${NONE:-${A}}", "x"),
        ("$", "$"),
        ('"a\\"b"', 'a"b'),
    ],
)
def test_expand(word: str, expected: str) -> None:
    assert expand(word, {"A": "x", "EMPTY": ""}) == expected


def test_copies_resolve_targets_against_workdir() -> None:
    df = parse()
    builder = [(c.sources, c.dest, c.target, c.from_) for c in df.copies("builder")]
    assert builder == [
        ((".",), "/app/env", "/app/env", None),
        (("pyproject.toml", "uv.lock"), "./", "/app/env", None),
    ]
    final = df.copies()
    assert [(c.target, c.from_) for c in final] == [("/app/env", "builder")]


def test_workdir() -> None:
    df = parse()
    assert df.workdir("builder") == "/app/env"
    assert df.workdir() is None


def test_cmd_shell_and_json_forms() -> None:
    shell = parse().cmd()
    assert shell is not None
    assert (shell.argv, shell.json) == (("/bin/sh", "-c", "uvicorn server.app:app"), False)
    json_cmd = parse('FROM x\nCMD ["uvicorn", "app:app"]\n').cmd()
    assert json_cmd is not None
    assert (json_cmd.argv, json_cmd.json) == (("uvicorn", "app:app"), True)
    assert parse("FROM x\n").cmd() is None


# -- editing ------------------------------------------------------------------------------


def test_replace_keeps_every_other_byte() -> None:
    df = parse()
    run = df.stage_instructions("builder")[-1]
    new = df.replace(run, "COPY pyproject.toml ./")
    assert new.text == TWO_STAGES.replace(
        "COPY pyproject.toml uv.lock ./", "COPY pyproject.toml ./"
    )
    assert new.instructions[run.index].value == ("pyproject.toml", "./")


def test_insert_before_and_after() -> None:
    df = parse("FROM x\n# note\nRUN a\n")
    run = df.instructions[1]
    assert df.insert_before(run, "RUN z").text == "FROM x\n# note\nRUN z\nRUN a\n"
    assert df.insert_after(df.instructions[0], "RUN y\n").text == "FROM x\nRUN y\n# note\nRUN a\n"


def test_edits_refuse_a_stale_instruction() -> None:
    df = parse("FROM x\nRUN a\n")
    old_run = df.instructions[1]
    moved = df.insert_before(df.instructions[0], "ARG A=1")
    with pytest.raises(ValueError, match="stale"):
        moved.replace(old_run, "RUN b")


def test_append_without_trailing_newline() -> None:
    df = parse('FROM x\nCMD ["a"]')
    assert df.append("ENV K=v").text == 'FROM x\nCMD ["a"]\nENV K=v\n'


def test_crlf_edits_keep_crlf() -> None:
    df = parse('FROM x\r\nRUN a \\\r\n  b\r\nCMD ["c"]')
    new = df.replace(df.instructions[1], "RUN a \\\n  c").append("ENV K=v")
    assert new.text == 'FROM x\r\nRUN a \\\r\n  c\r\nCMD ["c"]\r\nENV K=v\r\n'


def test_set_env_in_a_multi_key_env_keeps_the_other_keys() -> None:
    df = parse()
    new = df.set_env("B", "three words here")
    assert '  B="three words here" \\\n' in new.text
    assert new.text.count("# a comment inside the continuation") == 1
    assert new.stage_env(base_env={})["B"] == "three words here"
    assert new.stage_env(base_env={})["A"] == "1"


def test_set_env_replaces_a_legacy_env() -> None:
    new = parse().set_env("HOME", "/home/app")
    assert "ENV HOME=/home/app\n" in new.text
    assert "ENV HOME /root dir" not in new.text


def test_set_env_adds_after_the_stage_s_last_env() -> None:
    new = parse().set_env("K", "v", stage="builder")
    assert new.text.replace("COPY pyproject.toml uv.lock ./\nENV K=v\n", "", 1).count("K=v") == 0
    assert new.stage_env("builder", base_env={}) == {"K": "v"}
    final = parse().set_env("K", "v")
    lines = final.text.splitlines()
    assert lines[lines.index("ENV C=${A}-${MISSING:-fallback}-${A:+set}-$TAG") + 1] == "ENV K=v"


def test_set_env_at_the_end_of_a_stage_without_env() -> None:
    df = parse('FROM x\nCMD ["a"]\n# trailing comment')
    assert df.set_env("K", "v").text == 'FROM x\nCMD ["a"]\n# trailing comment\nENV K=v\n'
