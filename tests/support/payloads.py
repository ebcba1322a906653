"""Recorded responses of the LLM APIs in which a model calls two tools (``payloads/``), in
the shapes the vendors document: an OpenAI Chat Completions completion
(``choices[0].message.tool_calls``, arguments as JSON text), an OpenAI Responses API
response (``function_call`` items of ``output``, after a ``reasoning`` item) and an
Anthropic Messages API message (``tool_use`` blocks of ``content``, after a text block).

The two calls' tool names and arguments are placeholders (``TOOL_A``/``ARGS_A``,
``TOOL_B``/``ARGS_B``): :func:`recorded` fills them in, so that one recording serves any
tools the test exports, exactly as the API would have named them.
"""

from __future__ import annotations

import json
from typing import Any

from support.paths import TESTS

PAYLOADS = TESTS / "support" / "payloads"
FILES = {"openai": "openai_chat.json", "openai-responses": "openai_responses.json", "anthropic": "anthropic.json"}
#: The ids the recordings give the two calls, by format.
CALL_IDS = {
    "openai": ("call_Vq3RkX9mJ2sLbT7nYcE1aWdF", "call_8HpZ4uKe6GqMx0oNvBr5iSjC"),
    "openai-responses": ("call_Vq3RkX9mJ2sLbT7nYcE1aWdF", "call_8HpZ4uKe6GqMx0oNvBr5iSjC"),
    "anthropic": ("toolu_01A09q90qw90lq917835lq9", "toolu_01T1x1fJ34qAmk2tNTrN7Up6"),
}


def recorded(fmt: str, first: tuple[str, dict[str, Any]], second: tuple[str, dict[str, Any]]) -> Any:
    """The recorded response of format ``fmt`` calling ``first`` then ``second`` (each an
    exported tool name and its arguments): arguments as JSON text for OpenAI, as an object
    for Anthropic."""
    doc = json.loads((PAYLOADS / FILES[fmt]).read_text(encoding="utf-8"))

    def fill(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: fill(item) for key, item in value.items()}
        if isinstance(value, list):
            return [fill(item) for item in value]
        for placeholder, (name, arguments) in (("A", first), ("B", second)):
            if value == f"TOOL_{placeholder}":
                return name
            if value == f"ARGS_{placeholder}":
                return arguments if fmt == "anthropic" else json.dumps(arguments)
        return value

    return fill(doc)
