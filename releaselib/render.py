"""Rendering releaselib's packaged jinja2 templates (Space card, briefing, plugin scaffold)."""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import jinja2


@functools.cache
def environment(trim_blocks: bool = False) -> jinja2.Environment:
    """The jinja2 Environment over ``releaselib/templates`` (StrictUndefined: a missing value
    is an error, never an empty string)."""
    templates = resources.files("releaselib") / "templates"
    return jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: (templates / name).read_text(encoding="utf-8")),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=trim_blocks,
    )


def render(template: str, /, *, trim_blocks: bool = False, **context: Any) -> str:
    return environment(trim_blocks).get_template(template).render(**context)
