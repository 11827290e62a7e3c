"""The step bodies a probe sends: a minimal valid action for an env's action schema, and for a
tool-calling (MCP) env, ``list_tools`` then a ``call_tool`` of a listed tool with an argument
object valid for that tool's input schema (what openenv-core's ``CallToolAction`` takes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: The step body that asks a tool-calling env for its tools (openenv-core's ListToolsAction).
LIST_TOOLS = {"action": {"type": "list_tools"}}


def is_tool_calling(action_schema: Mapping[str, Any]) -> bool:
    """Whether ``action_schema`` is openenv-core's ``CallToolAction`` (an MCP env's action), or
    a union with it as one of its branches."""
    defs = action_schema.get("$defs", {})
    branches = [
        _resolve(branch, defs)
        for key in ("anyOf", "oneOf")
        for branch in action_schema.get(key) or ()
        if isinstance(branch, Mapping)
    ]
    for schema in (action_schema, *branches):
        properties = schema.get("properties")
        if isinstance(properties, Mapping) and {"tool_name", "arguments"} <= properties.keys():
            return True
    return False


def call_tool_body(tools: Sequence[Any]) -> dict[str, Any] | None:
    """The ``call_tool`` step body for the first listed tool (its required arguments filled
    from its input schema); None when no tool is listed with a name."""
    for tool in tools:
        if isinstance(tool, Mapping) and isinstance(tool.get("name"), str) and tool["name"]:
            schema = tool.get("input_schema") or tool.get("inputSchema") or {}
            schema = schema if isinstance(schema, Mapping) else {}
            arguments = example_value({"type": "object", **schema}, schema.get("$defs", {}))
            action = {"type": "call_tool", "tool_name": tool["name"], "arguments": arguments}
            return {"action": action}
    return None


def step_body_for(action_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``/step`` body for an action JSON schema: ``{"action": <minimal valid action>}``."""
    return {"action": example_value(action_schema, action_schema.get("$defs", {}))}


def example_value(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int = 0) -> Any:
    """A minimal value satisfying ``schema``: its default, const or first enum value, else
    the required properties of an object and the smallest value of a scalar type."""
    if depth > 20:
        return None
    schema = _resolve(schema, defs)
    for key in ("default", "const"):
        if key in schema:
            return schema[key]
    if schema.get("enum"):
        return schema["enum"][0]
    options = schema.get("anyOf") or schema.get("oneOf") or schema.get("allOf")
    if options:
        chosen = next((o for o in options if _resolve(o, defs).get("type") != "null"), options[0])
        return example_value(chosen, defs, depth + 1)
    return _typed_value(schema, defs, depth)


def _typed_value(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int) -> Any:
    kind = schema.get("type", "object" if "properties" in schema else None)
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties", {})
        return {
            name: example_value(properties.get(name, {}), defs, depth + 1)
            for name in schema.get("required", ())
        }
    if kind == "array":
        item = example_value(schema.get("items", {}), defs, depth + 1)
        return [item] * int(schema.get("minItems", 0))
    if kind == "string":
        return "a" * int(schema.get("minLength", 0))
    if kind in ("integer", "number"):
        return _smallest_number(schema, kind)
    if kind == "boolean":
        return False
    return None


def _smallest_number(schema: Mapping[str, Any], kind: str) -> int | float:
    if "minimum" in schema:
        value = schema["minimum"]
    elif "exclusiveMinimum" in schema:
        value = schema["exclusiveMinimum"] + 1
    else:
        value = 0
    return int(value) if kind == "integer" else float(value)


def _resolve(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    """Follow a local ``$ref`` (``#/$defs/Name`` or ``#/definitions/Name``)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target = defs.get(ref.rsplit("/", 1)[-1])
        if isinstance(target, Mapping):
            return _resolve(target, defs)
    return schema
