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


def example_value(
    schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int = 0, index: int = 0
) -> Any:
    """A minimal value satisfying ``schema``: its default, const or an enum value, else the
    required properties of an object and the smallest value of a scalar type within its bounds
    (minimum/maximum and their exclusive forms, minLength/maxLength, format, minItems). ``index``
    picks the index-th distinct value (for ``uniqueItems`` arrays)."""
    if depth > 20:
        return None
    schema = _resolve(schema, defs)
    if "default" in schema and index == 0:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][index % len(schema["enum"])]
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        chosen = next((o for o in options if _resolve(o, defs).get("type") != "null"), options[0])
        return example_value(chosen, defs, depth + 1, index)
    if schema.get("allOf"):
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(_resolve(part, defs))
        merged.update({k: v for k, v in schema.items() if k != "allOf"})
        return example_value(merged, defs, depth + 1, index)
    return _typed_value(schema, defs, depth, index)


def _typed_value(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int, index: int) -> Any:
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
        item, count = schema.get("items", {}), int(schema.get("minItems", 0))
        if schema.get("uniqueItems"):
            return [example_value(item, defs, depth + 1, i) for i in range(count)]
        return [example_value(item, defs, depth + 1, index)] * count
    if kind == "string":
        return _string(schema, index)
    if kind in ("integer", "number"):
        return _number(schema, kind, index)
    if kind == "boolean":
        return index % 2 == 1
    return None


#: A valid string of each common ``format``, by index.
_FORMATS = {
    "email": "probe{}@example.com",
    "idn-email": "probe{}@example.com",
    "uri": "https://example.com/{}",
    "url": "https://example.com/{}",
    "iri": "https://example.com/{}",
    "date": "2024-01-{:02d}",
    "date-time": "2024-01-{:02d}T00:00:00Z",
    "time": "00:00:{:02d}",
    "uuid": "00000000-0000-4000-8000-{:012d}",
    "ipv4": "192.0.2.{}",
    "hostname": "host{}.example.com",
}


def _string(schema: Mapping[str, Any], index: int) -> str:
    pattern = _FORMATS.get(str(schema.get("format", "")))
    if pattern is not None:
        return pattern.format(index + 1 if "{:02d}" in pattern else index)
    least, most = int(schema.get("minLength", 0)), schema.get("maxLength")
    text = "a" * max(least, 1 if index else 0) + (str(index) if index else "")
    return text[: int(most)] if most is not None and index == 0 else text


def _number(schema: Mapping[str, Any], kind: str, index: int) -> int | float:
    """The index-th smallest value in the schema's bounds, 0 (or the bound nearest 0) first."""
    step = 1
    low, high = schema.get("minimum"), schema.get("maximum")
    if "exclusiveMinimum" in schema and not isinstance(schema["exclusiveMinimum"], bool):
        low = schema["exclusiveMinimum"] + step
    if "exclusiveMaximum" in schema and not isinstance(schema["exclusiveMaximum"], bool):
        high = schema["exclusiveMaximum"] - step
    if low is not None:
        value = low + index * step
    elif high is not None:
        value = min(0, high) - index * step
    else:
        value = index * step
    if kind == "integer":
        return int(-(-value // 1)) if low is not None else int(value // 1)
    return float(value)


def _resolve(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    """Follow a local ``$ref`` (``#/$defs/Name`` or ``#/definitions/Name``)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target = defs.get(ref.rsplit("/", 1)[-1])
        if isinstance(target, Mapping):
            return _resolve(target, defs)
    return schema
