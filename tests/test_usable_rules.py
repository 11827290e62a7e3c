"""The usable-data rules against a hostile tester's answers (issue 25): a small in-process env
answers each body, and the probe's verdict must be the one README's "A PASS needs usable data"
states."""

from __future__ import annotations

import json
from typing import Any

import httpx
import jsonschema  # openenv-core's MCP server validates tool arguments with it
import pytest

from releaselib.verify.probe import Outcome, ProbeResult, probe_base_url

ACTION = {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}
OK = {"observation": {"echoed": "hi"}, "reward": 0.0, "done": False}
#: openenv-core's MCP action: a union of ListToolsAction and CallToolAction.
MCP_ACTION = {
    "anyOf": [
        {"properties": {"type": {"const": "list_tools"}}},
        {
            "properties": {
                "type": {"const": "call_tool"},
                "tool_name": {"type": "string"},
                "arguments": {"type": "object"},
            }
        },
    ]
}


def env(
    reset: Any = OK, step: Any = OK, *, status: int = 200, tools: list[Any] | None = None
) -> httpx.MockTransport:
    """An env answering ``reset`` and ``step`` with these bodies; with ``tools``, an MCP env
    whose ``call_tool`` checks the arguments against the tool's input schema like FastMCP."""

    def answer(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/health":
            return httpx.Response(200, json={"status": "healthy"})
        if path == "/schema":
            return httpx.Response(200, json={"action": MCP_ACTION if tools else ACTION})
        if path == "/reset":
            return httpx.Response(status, json=reset)
        action = json.loads(request.content)["action"]
        if tools is not None and action.get("type") == "list_tools":
            return httpx.Response(200, json={"observation": {"tools": tools}, "done": False})
        if tools is not None and action.get("type") == "call_tool":
            return httpx.Response(200, json=call(tools, action))
        return httpx.Response(200, json=step)

    return httpx.MockTransport(answer)


def call(tools: list[Any], action: dict[str, Any]) -> dict[str, Any]:
    """FastMCP's answer: the tool's text, or its validation error of the arguments."""
    schema = next(t["input_schema"] for t in tools if t["name"] == action["tool_name"])
    try:
        jsonschema.validate(
            action["arguments"],
            schema,
            format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
        )
    except jsonschema.ValidationError as exc:
        text = f"1 validation error for call[{action['tool_name']}]: {exc.message}"
        return {"observation": {"error": {"code": -32602, "message": text}}, "done": False}
    return {"observation": {"result": {"content": [{"type": "text", "text": "ok"}]}}, "done": False}


def probe(transport: httpx.MockTransport, needs: tuple[str, ...] = ()) -> ProbeResult:
    return probe_base_url("http://env.test", timeout=5, transport=transport, needs=needs)


def nested(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = {"info": value}
    return value


def observed(observation: Any, **fields: Any) -> dict[str, Any]:
    return {"observation": observation, "reward": 0.0, "done": False, **fields}


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (observed({"echoed": "hi"}, error="boom"), "error: boom"),  # 7: beside the observation
        (observed({"result": {"error": "boom"}}), "error: boom"),  # 8: nested
        (observed({"metadata": {"info": {"error": "boom"}}}), "error: boom"),
        (observed({"errorMessage": "KeyError: x"}), "errorMessage: KeyError: x"),  # 9
        (observed({"Error": "boom"}), "Error: boom"),
        (observed({"status": "error", "message": "invalid state"}), "invalid state"),  # 12
        (observed({"success": False, "message": "invalid move"}), "invalid move"),
        (observed({"result": "Error executing tool t: division by zero"}), "division by zero"),
        (observed({"result": {"isError": True, "content": [{"text": "bad"}]}}), "bad"),  # 22
        (observed({"failure_reason": "RuntimeError: dataset missing"}), "dataset missing"),
        (observed({"status_code": 500, "detail": "Internal Server Error"}), "status code 500"),
        (observed({"message": "Environment not initialised, reset it first"}), "not started"),
        (observed({"text": "Please call reset() before step()"}), "not started"),
        (observed(nested({"error": "dataset missing"}, 20)), "dataset missing"),
    ],
)
def test_an_error_anywhere_in_the_answer_fails(answer: dict[str, Any], said: str) -> None:
    result = probe(env(reset=answer))
    assert result.outcome is Outcome.FAIL and not result.our_error
    assert (
        result.reason.startswith("POST /reset answered an observation with ")
        and said in result.reason
    )


def test_an_error_answering_the_step_we_derived_is_our_request_refused() -> None:
    """The env handled our guess at an action and said no (an illegal move): INCONCLUSIVE,
    ours, with the remedy; a 500 on it is the env's FAIL."""
    refused = probe(env(step=observed({"success": False, "message": "illegal move ''"})))
    assert refused.outcome is Outcome.INCONCLUSIVE and refused.our_error
    assert "illegal move" in refused.reason and "give the env's plugin a step probe" in refused.reason


def test_empty_error_fields_and_a_successful_status_pass() -> None:
    quiet = observed(
        {"error": None, "errors": [], "is_error": False, "status": "ok", "success": True}
    )
    assert probe(env(step=quiet)).outcome is Outcome.PASS


@pytest.mark.parametrize("observation", ["Error: dataset missing", ["Traceback"], None])
def test_an_observation_that_is_not_an_object_fails(observation: Any) -> None:  # 10/11
    result = probe(env(reset=observed(observation, error="RuntimeError")))
    assert result.outcome is Outcome.FAIL
    assert result.reason == "POST /reset answered 200 without an observation"


def test_a_first_reset_done_fails_with_its_message_or_without_one() -> None:  # 14
    crashed = observed({"message": "Episode aborted: environment crashed"}, done=True)
    result = probe(env(reset=crashed))
    assert result.outcome is Outcome.FAIL and "environment crashed" in result.reason
    over = probe(env(reset=observed({"board": []}, done=True)))  # an episode over before it began
    assert over.outcome is Outcome.FAIL and "an empty observation" in over.reason
    for said in (observed({"done": True, "text": "Game over"}), observed({}, done="true")):
        assert probe(env(reset=said)).outcome is Outcome.FAIL


@pytest.mark.parametrize(
    ("need", "error", "named"),
    [
        ("secret OPENAI_API_KEY", "IndexError in tokenizer", False),  # 17
        ("secret OPENAI_API_KEY", "self.board is not set", False),
        ("secret OPENAI_API_KEY", "OPENAI_API_KEY is not set", True),
        ("secret OPENAI_API_KEY", "The OpenAI API key is missing", True),
        ("hardware t4-small", "OSError: No space left on device", False),
        ("hardware t4-small", "RuntimeError: CUDA is not available", True),
        ("service redis", "KeyError: 'connect_timeout'", False),
        ("service redis", "cannot connect to redis at localhost:6379", True),
        ("the GPT-2 tokenizer from huggingface.co", "IndexError in tokenizer", False),
        ("the GPT-2 tokenizer from huggingface.co", "could not download GPT-2", True),
    ],
)
def test_an_error_names_a_declared_need_only_by_its_name(
    need: str, error: str, named: bool
) -> None:
    result = probe(env(reset=observed({"error": error})), needs=(need,))
    assert result.outcome is (Outcome.INCONCLUSIVE if named else Outcome.FAIL), result.reason
    assert result.needs == ((need,) if named else ())


TOOLS = [
    {"type": "integer", "maximum": -1},
    {"type": "number", "exclusiveMinimum": 2, "exclusiveMaximum": 4},
    {"type": "string", "format": "email"},
    {"type": "string", "format": "uri"},
    {"type": "string", "format": "date"},
    {"type": "string", "minLength": 3, "maxLength": 5},
    {"type": "string", "enum": ["north", "south"]},
    {"type": "array", "items": {"type": "integer"}, "minItems": 2, "uniqueItems": True},
    {
        "type": "array",
        "items": {"type": "string", "format": "email"},
        "minItems": 2,
        "uniqueItems": True,
    },
    {
        "type": "object",
        "properties": {"at": {"type": "integer", "minimum": 5}, "tag": {"const": "x"}},
        "required": ["at", "tag"],
    },
]


@pytest.mark.parametrize("argument", TOOLS, ids=lambda s: json.dumps(s)[:40])
def test_tool_arguments_honour_the_tools_schema_constraints(argument: dict[str, Any]) -> None:  # 20
    tool = {
        "name": "t",
        "input_schema": {"type": "object", "properties": {"a": argument}, "required": ["a"]},
    }
    result = probe(env(tools=[tool]))
    assert result.outcome is Outcome.PASS, result.reason


def test_a_tool_rejecting_our_arguments_is_our_error_never_a_fail() -> None:  # 20
    tool = {
        "name": "t",
        "input_schema": {
            "properties": {"a": {"type": "string", "pattern": "^z+$"}},
            "required": ["a"],
        },
    }
    result = probe(env(tools=[tool]))
    assert result.outcome is Outcome.INCONCLUSIVE and result.our_error
    assert "fix the probe: give the env's plugin a step probe" in result.reason


def test_a_422_not_about_our_body_is_the_envs_answer() -> None:  # 35
    detail = {"detail": [{"loc": ["settings", "DATABASE_URL"], "msg": "Field required"}]}
    result = probe(env(reset=detail, status=422))
    assert result.outcome is Outcome.FAIL and not result.our_error
    ours = {"detail": [{"loc": ["body", "seed"], "msg": "Input should be an integer"}]}
    assert probe(env(reset=ours, status=422)).our_error


def test_any_2xx_with_a_usable_observation_passes() -> None:  # 36
    assert probe(env(status=201)).outcome is Outcome.PASS


def test_what_the_dress_rehearsal_passed_hollow_is_no_longer_usable() -> None:
    """The real checkout's hollow PASSes: coding_tools, jupyter and terminus answered the first
    reset done with an empty observation (openenv-core drops the metadata naming the missing
    key), then a tool text "Error: …"; websearch's content began "[ERROR] Search failed"."""
    from releaselib.verify.usable import error_in

    assert error_in({"observation": {}, "done": True}, first_reset=True) == (
        "done on the first reset: an empty observation"
    )
    tool = {"content": [{"type": "text", "text": "Error: environment not reset. Call reset() first."}]}
    assert "Call reset() first" in (error_in({"observation": {"result": tool}, "done": False}) or "")
    search = {"content": "[ERROR] Search failed: NameResolutionError google.serper.dev"}
    assert "Search failed" in (error_in({"observation": search, "done": False}) or "")
    assert error_in({"observation": {"echoed_message": "", "message_length": 0}, "done": False}) is None
    assert error_in({"observation": {"board": "...."}, "done": False}, first_reset=True) is None


def test_a_422_naming_a_field_of_our_action_or_one_we_left_out_is_ours() -> None:
    """openenv-core validates the action itself: its 422 ``loc`` is ``["counter"]``, no ``body``."""
    from releaselib.verify.probe import _error_locations

    sent = {"action": {"counter": ""}}
    bad = {"detail": [{"type": "string_pattern_mismatch", "loc": ["counter"], "msg": "x"}]}
    missing = {"detail": [{"type": "missing", "loc": ["amount"], "msg": "Field required"}]}
    theirs = {"detail": [{"type": "missing", "loc": ["settings", "DATABASE_URL"], "msg": "x"}]}
    assert _error_locations(bad, sent) == "at counter"
    assert _error_locations(missing, sent) == "at amount"
    assert _error_locations(theirs, sent) is None


def test_a_need_named_past_the_verdicts_line_is_still_matched() -> None:
    """The verdict says an error in one short line; the declared needs are matched against all
    of it (a traceback names the missing key late)."""
    from releaselib.verify.usable import LINE, error_in, needs_named

    answer = {"observation": {"error": "x" * LINE + " E2B_API_KEY is not set"}, "done": False}
    line = error_in(answer)
    assert line is not None and len(line) <= LINE + len("error: ")
    assert needs_named(line, ("secret E2B_API_KEY",)) == ()
    whole = error_in(answer, whole=True)
    assert whole is not None and needs_named(whole, ("secret E2B_API_KEY",)) == ("secret E2B_API_KEY",)


def test_a_validation_error_of_the_envs_own_field_is_not_one_of_our_arguments() -> None:
    """``query`` is not ``query_index_path``: the env's own settings failing validation is its
    error, not a rejection of the argument we sent."""
    from releaselib.verify.usable import rejects_arguments

    own = "Error executing tool search: 1 validation error for IndexSettings\nquery_index_path\n  Input should be a valid path"
    assert not rejects_arguments(own, {"query": "x"})
    assert rejects_arguments("1 validation error for call[search]\nquery\n  Input should be a valid string", {"query": 1})


@pytest.mark.parametrize(
    "healthy",
    [
        {"text": "you may reset before your third move"},
        {"diagnostics": "variable 'x' is used but not initialized"},
        {"last_response": {"status_code": 503, "body": "upstream down"}},  # data about a call
        {"prediction": 1.5, "error": 0.25},  # a regression env's metric
    ],
)
def test_words_and_numbers_a_healthy_env_answers_with_pass(healthy: dict[str, Any]) -> None:
    assert probe(env(reset=observed(healthy), step=observed(healthy))).outcome is Outcome.PASS


@pytest.mark.parametrize(
    "hollow",
    [
        "RuntimeError: Environment has not been reset; no active episode",
        "No active episode. Please reset the env first.",
    ],
)
def test_an_answer_saying_there_is_no_episode_fails(hollow: str) -> None:
    result = probe(env(reset=observed({"message": hollow})))
    assert result.outcome is Outcome.FAIL and "not started" in result.reason


@pytest.mark.parametrize(
    "crash",
    [
        {"error": "Traceback (most recent call last):\n  ZeroDivisionError: division by zero"},
        {"message": "RuntimeError: call reset() before step()"},
        {"status_code": 500, "message": "Internal Server Error"},
    ],
)
def test_a_crash_answering_the_step_we_derived_is_the_envs_fail(crash: dict[str, Any]) -> None:
    """No action excuses these: a crash sent as a 200 is FAIL even for our guessed action."""
    result = probe(env(step=observed(crash)))
    assert result.outcome is Outcome.FAIL and not result.our_error, result.reason
