"""MCP tools offered to a language model, in the tool formats of the major LLM APIs, and
the model's tool calls turned back into ``call_tool`` (docs/howto/host.md): plain dicts, no
vendor SDK.

:class:`LlmTools` is one set of tools in one format:

* ``"openai"`` — OpenAI Chat Completions: ``{"type": "function", "function": {"name",
  "description", "parameters"}}``; the model's calls are the ``tool_calls`` of its
  message, each with ``arguments`` as JSON text; a result goes back as a ``{"role":
  "tool", "tool_call_id", "content"}`` message;
* ``"openai-responses"`` — the OpenAI Responses API: ``{"type": "function", "name",
  "description", "parameters", "strict": false}`` (the API would otherwise hold the
  schema to its strict subset); calls are ``function_call`` items of ``output``; a result
  is a ``function_call_output`` item;
* ``"anthropic"`` — the Anthropic Messages API: ``{"name", "description",
  "input_schema"}``; calls are ``tool_use`` blocks of the message's ``content``, with
  ``input`` as an object; a result is a ``tool_result`` block (``is_error`` set from the
  tool's result, images as image blocks).

What is adjusted, and why (:func:`adjust_schema`), because these APIs restrict what an MCP
tool may say:

* **names** must match ``^[a-zA-Z0-9_-]{1,64}$`` in all three; MCP names may hold dots,
  slashes and more, and a group's names do (``server.tool``). Every other character
  becomes ``_``; a name longer than 64 characters, or one that would collide with
  another tool's after that, is cut to 55 characters and given ``_`` and 8 hex digits of
  a hash of the full name. :meth:`LlmTools.tool_name` maps back; calls are mapped back
  by themselves;
* **the input schema's root** must be an object schema (``"type": "object"``) and may
  not be a combination or a constant (``anyOf``, ``oneOf``, ``allOf``, ``not``,
  ``enum``, ``const``, ``if``/``then``/``else`` at the top level are refused by both
  vendors). ``type`` is set to ``"object"`` (and ``properties`` to ``{}`` if absent);
  a root ``allOf`` is merged into the root (its branches' ``properties`` and
  ``required`` joined); a root ``anyOf``/``oneOf`` becomes one object whose
  ``properties`` are every branch's and whose ``required`` are those every branch
  requires; ``not``, ``enum``, ``const``, ``if``, ``then`` and ``else`` at the root are
  dropped. Nothing below the root is touched. What the relaxed schema lets through, the
  server still validates: the model then sees the server's error and can try again;
* **descriptions**: a tool without one gets its ``title`` (the models choose tools by
  them); none is invented.

Nothing is made "strict" (OpenAI's structured-outputs subset would rewrite every optional
property); :attr:`LlmTools.adjusted` says which tools were changed, and how.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal

import msgspec

from ..protocol.apps import visible_to_model
from ..protocol.content import AudioContent, EmbeddedResource, ImageContent, ResourceLink, TextContent
from ..protocol.types import CallToolResult, Tool

__all__ = ["LlmTools", "ToolCall", "ToolFormat", "FORMATS", "adjust_schema", "llm_name"]

ToolFormat = Literal["openai", "openai-responses", "anthropic"]
FORMATS: Final[tuple[ToolFormat, ...]] = ("openai", "openai-responses", "anthropic")
_NAME: Final = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_BAD: Final = re.compile(r"[^a-zA-Z0-9_-]")
_DROPPED: Final = ("not", "enum", "const", "if", "then", "else")


@dataclasses.dataclass(frozen=True)
class ToolCall:
    """A tool call a model made, mapped back to the MCP tool.

    Attributes:
        id: The call's id, as the model gave it (``tool_call_id``, ``call_id``, or the
            ``tool_use`` block's ``id``): a result must name it.
        name: The MCP tool's name (in a group, its group-wide name): pass it to
            ``call_tool`` with ``arguments``.
        arguments: The arguments, decoded.
        called: The name the model used (the exported one).
        format: The API format it came in.
        error: Why the call cannot be made, if it cannot (a tool that was not offered,
            arguments that are not a JSON object): answer the model with it
            (``LlmTools.result(call, error=call.error)``) rather than calling anything.
    """

    id: str
    name: str
    arguments: dict[str, Any]
    called: str
    format: ToolFormat
    error: str | None = None


class LlmTools:
    """A set of MCP tools in one LLM API's tool format (see the module's docstring).

    ``LlmTools(tools, "anthropic")`` for a client's ``list_all_tools()``, or
    ``await group.llm_tools("anthropic")`` for a whole group. :attr:`definitions` go in the
    request's ``tools``; :meth:`calls` reads the model's tool calls from its response;
    :meth:`result` makes the item that gives a call's result back. Raises ``ValueError``
    for an unknown format.

    A tool whose MCP Apps visibility leaves out the model (``_meta.ui.visibility:
    ["app"]``: only its server's views may call it, docs/apps.md) is left out, its name
    kept in :attr:`hidden`.
    """

    def __init__(self, tools: Iterable[Tool], format: ToolFormat = "openai") -> None:
        if format not in FORMATS:
            raise ValueError(f"unknown tool format {format!r}: expected one of {', '.join(FORMATS)}")
        self.format: ToolFormat = format
        offered = list(tools)
        self.tools: list[Tool] = [tool for tool in offered if visible_to_model(tool)]
        #: The tools left out because only views may use them (MCP Apps).
        self.hidden: list[str] = [tool.name for tool in offered if not visible_to_model(tool)]
        #: The tool definitions, for the request's ``tools``.
        self.definitions: list[dict[str, Any]] = []
        #: Tool name -> what was changed to fit the format (only tools that were changed).
        self.adjusted: dict[str, list[str]] = {}
        self._by_exported: dict[str, Tool] = {}
        self._exported: dict[str, str] = {}
        for tool in self.tools:
            exported = llm_name(tool.name, taken=self._by_exported.keys())
            self._by_exported[exported] = tool
            self._exported[tool.name] = exported
            schema, notes = adjust_schema(tool.input_schema)
            if exported != tool.name:
                notes.insert(0, f"named {exported!r}")
            if notes:
                self.adjusted[tool.name] = notes
            self.definitions.append(self._definition(tool, exported, schema))

    def _definition(self, tool: Tool, name: str, schema: dict[str, Any]) -> dict[str, Any]:
        description = tool.description or tool.title
        if self.format == "anthropic":
            out: dict[str, Any] = {"name": name, "input_schema": schema}
            if description:
                out["description"] = description
            return out
        function: dict[str, Any] = {"type": "function", "name": name}
        if description:
            function["description"] = description
        function["parameters"] = schema
        if self.format == "openai-responses":
            function["strict"] = False
            return function
        del function["type"]
        return {"type": "function", "function": function}

    def exported_name(self, name: str) -> str:
        """The name the model sees for the MCP tool ``name``. Raises ``KeyError``."""
        return self._exported[name]

    def tool_name(self, exported: str) -> str:
        """The MCP tool behind the name the model sees. Raises ``KeyError``."""
        return self._by_exported[exported].name

    # --- the model's calls -----------------------------------------------------------------------

    def calls(self, payload: Any) -> list[ToolCall]:
        """The tool calls in ``payload``, in this set's format: a whole API response, the
        model's message (or the ``output`` list), the list of calls or blocks, or one of
        them. Text and other blocks are skipped; a response without calls gives ``[]``.
        A call to a tool this set does not offer, or with arguments that are not a JSON
        object, comes with its ``error`` set. Raises ``ValueError`` for a payload that is
        not of this format at all."""
        items = _call_items(payload, self.format)
        return [self._call(item) for item in items]

    def _call(self, item: Mapping[str, Any]) -> ToolCall:
        fmt = self.format
        if fmt == "openai":
            function = item.get("function")
            if not isinstance(function, Mapping):
                raise ValueError("an OpenAI tool call has a 'function' object")
            call_id, called, raw = item.get("id"), function.get("name"), function.get("arguments")
        elif fmt == "openai-responses":
            call_id, called, raw = item.get("call_id"), item.get("name"), item.get("arguments")
        else:
            call_id, called, raw = item.get("id"), item.get("name"), item.get("input")
        if not isinstance(call_id, str) or not isinstance(called, str):
            raise ValueError(f"a tool call in the {fmt} format has a string id and name: {_brief(item)}")
        arguments, error = _arguments(raw, fmt)
        tool = self._by_exported.get(called)
        if tool is None:
            offered = ", ".join(sorted(self._by_exported)) or "none"
            return ToolCall(call_id, called, arguments, called, fmt, f"there is no tool {called!r} (offered: {offered})")
        return ToolCall(call_id, tool.name, arguments, called, fmt, error)

    # --- results back to the model ---------------------------------------------------------------

    def result(self, call: ToolCall, result: CallToolResult | None = None, *, error: str | None = None) -> dict[str, Any]:
        """What gives ``call``'s outcome back to the model, in this set's format: the
        tool's ``result``, or an ``error`` message (a call that could not be made, an
        exception the call raised). OpenAI Chat Completions: a ``"tool"`` message;
        Responses: a ``function_call_output`` item; Anthropic: a ``tool_result`` block for
        the next user message. Raises ``ValueError`` without either."""
        if result is None and error is None:
            raise ValueError("give the call's result or an error")
        failed = error is not None or bool(result is not None and result.is_error)
        if self.format == "anthropic":
            blocks = _anthropic_blocks(result) if error is None and result is not None else [{"type": "text", "text": error}]
            out: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.id, "content": blocks}
            if failed:
                out["is_error"] = True
            return out
        text = error if error is not None else _as_text(result) if result is not None else ""
        if self.format == "openai-responses":
            return {"type": "function_call_output", "call_id": call.id, "output": text}
        return {"role": "tool", "tool_call_id": call.id, "content": text}


def llm_name(name: str, taken: Iterable[str] = ()) -> str:
    """``name`` as the LLM APIs accept a tool's name (``^[a-zA-Z0-9_-]{1,64}$``), not one
    of ``taken`` (see the module's docstring)."""
    taken = set(taken)
    plain = _BAD.sub("_", name) or "_"
    if _NAME.fullmatch(plain) and plain not in taken:
        return plain
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()
    for width in range(8, 65):
        candidate = f"{plain[:55]}_{digest[:width]}"[:64]
        if candidate not in taken:
            return candidate
    raise ValueError(f"no free name for tool {name!r}")  # pragma: no cover - 2**256 names


def adjust_schema(schema: Any) -> tuple[dict[str, Any], list[str]]:
    """An MCP tool's ``inputSchema`` as the LLM APIs accept it, and what was changed
    (see the module's docstring). ``schema`` is not modified."""
    notes: list[str] = []
    if not isinstance(schema, Mapping):
        return {"type": "object", "properties": {}}, ["the input schema was not an object schema: replaced by an empty one"]
    out = copy.deepcopy(dict(schema))
    if "allOf" in out:
        branches = [b for b in out.pop("allOf") if isinstance(b, Mapping)]
        for branch in branches:
            _merge_into(out, branch, required=True)
        notes.append("root allOf merged into the root")
    for key in ("anyOf", "oneOf"):
        if key in out:
            branches = [b for b in out.pop(key) if isinstance(b, Mapping)]
            common: set[str] | None = None
            for branch in branches:
                _merge_into(out, branch, required=False)
                wanted = {r for r in branch.get("required", ()) if isinstance(r, str)}
                common = wanted if common is None else common & wanted
            if common:
                out["required"] = list(dict.fromkeys([*out.get("required", []), *sorted(common)]))
            notes.append(f"root {key} flattened: every branch's properties, required only where all branches require")
    dropped = [key for key in _DROPPED if key in out]
    for key in dropped:
        del out[key]
    if dropped:
        notes.append(f"root {', '.join(dropped)} dropped")
    if out.get("type") != "object":
        if "type" in out:
            notes.append(f"root type {out['type']!r} replaced by 'object'")
        out["type"] = "object"
    if not isinstance(out.get("properties"), Mapping):
        out["properties"] = {}
    return out, notes


def _merge_into(root: dict[str, Any], branch: Mapping[str, Any], *, required: bool) -> None:
    props = branch.get("properties")
    if isinstance(props, Mapping):
        root.setdefault("properties", {})
        if isinstance(root["properties"], dict):
            for key, value in props.items():
                root["properties"].setdefault(key, copy.deepcopy(value))
    if required:
        wanted = [r for r in branch.get("required", ()) if isinstance(r, str)]
        if wanted:
            root["required"] = list(dict.fromkeys([*root.get("required", []), *wanted]))


def _call_items(payload: Any, fmt: ToolFormat) -> list[Mapping[str, Any]]:
    """The call items of ``payload`` (see :meth:`LlmTools.calls`)."""
    if isinstance(payload, Mapping):
        if fmt == "openai":
            if "choices" in payload:
                choices = payload["choices"]
                message = (
                    choices[0].get("message")
                    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping)
                    else None
                )
                return _call_items(message or {}, fmt)
            if "tool_calls" in payload or payload.get("role") == "assistant":
                return _call_items(payload.get("tool_calls") or [], fmt)
            if "function" in payload:
                return [payload]
        elif fmt == "openai-responses":
            if "output" in payload:
                return _call_items(payload["output"], fmt)
            if payload.get("type") == "function_call":
                return [payload]
        else:
            if "content" in payload and payload.get("type") != "tool_use":
                return _call_items(payload["content"], fmt)
            if payload.get("type") == "tool_use":
                return [payload]
        if fmt != "openai" and isinstance(payload.get("type"), str):
            return []  # another kind of item or block (text, reasoning): no call
        raise ValueError(f"not a tool call, a message or a response of the {fmt} format: {_brief(payload)}")
    if isinstance(payload, Sequence) and not isinstance(payload, (str, bytes)):
        wanted = {"openai": None, "openai-responses": "function_call", "anthropic": "tool_use"}[fmt]
        items: list[Mapping[str, Any]] = []
        for item in payload:
            if not isinstance(item, Mapping):
                raise ValueError(f"a list of {fmt} calls holds objects, not {type(item).__name__}")
            if wanted is None or item.get("type") == wanted:
                items.append(item)
        return items
    raise ValueError(f"not a tool call, a message or a response of the {fmt} format: {type(payload).__name__}")


def _arguments(raw: Any, fmt: ToolFormat) -> tuple[dict[str, Any], str | None]:
    """The call's arguments, and why they are unusable if they are."""
    if fmt != "anthropic":
        if raw is None or raw == "":
            return {}, None
        if not isinstance(raw, str):
            return {}, "the arguments are not JSON text"
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            return {}, f"the arguments are not valid JSON: {exc}"
    if raw is None:
        return {}, None
    if not isinstance(raw, dict):
        return {}, f"the arguments must be a JSON object, not {type(raw).__name__}"
    return raw, None


def _as_text(result: CallToolResult) -> str:
    """A tool result as one text, for the APIs whose tool results are text: its text
    blocks; the structured content (JSON) when there are none; other blocks described."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        else:
            parts.append(_describe(block))
    if not any(isinstance(block, TextContent) for block in result.content) and result.structured_content is not None:
        parts.insert(0, json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def _anthropic_blocks(result: CallToolResult) -> list[dict[str, Any]]:
    """A tool result as the blocks of an Anthropic ``tool_result``: text, images as image
    blocks, the rest described in text."""
    blocks: list[dict[str, Any]] = []
    for block in result.content:
        if isinstance(block, TextContent):
            blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": block.mime_type, "data": block.data}})
        else:
            blocks.append({"type": "text", "text": _describe(block)})
    if not any(b["type"] == "text" for b in blocks) and result.structured_content is not None:
        blocks.insert(0, {"type": "text", "text": json.dumps(result.structured_content, ensure_ascii=False)})
    return blocks or [{"type": "text", "text": ""}]


def _describe(block: Any) -> str:
    if isinstance(block, ImageContent):
        return f"[image: {block.mime_type}]"
    if isinstance(block, AudioContent):
        return f"[audio: {block.mime_type}]"
    if isinstance(block, ResourceLink):
        return f"[resource: {block.uri}]"
    if isinstance(block, EmbeddedResource):
        text = getattr(block.resource, "text", None)
        return text if isinstance(text, str) else f"[resource: {block.resource.uri}]"
    return json.dumps(msgspec.to_builtins(block), ensure_ascii=False)


def _brief(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 200 else text[:200] + "…"
