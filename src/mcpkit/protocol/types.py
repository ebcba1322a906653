"""MCP wire types: typed values decoded once, camelCase on the wire, snake_case here.

These are msgspec structs: decoding validates shapes in C, encoding never re-validates
what this process built. Unknown fields from a peer are ignored, so newer peers stay
readable.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec
from msgspec import UNSET, UnsetType, field

__all__ = [
    "LOG_LEVELS",
    "LogLevel",
    "Params",
    "Result",
    "Cacheable",
    "Annotations",
    "Icon",
    "Implementation",
    "TextContent",
    "ImageContent",
    "AudioContent",
    "ResourceLink",
    "ResourceContents",
    "EmbeddedResource",
    "Content",
    "ToolAnnotations",
    "Tool",
    "CallToolResult",
    "ListToolsResult",
    "Resource",
    "ResourceTemplate",
    "ListResourcesResult",
    "ListResourceTemplatesResult",
    "ReadResourceResult",
    "PromptArgument",
    "Prompt",
    "PromptMessage",
    "GetPromptResult",
    "ListPromptsResult",
    "Completion",
    "CompleteResult",
    "DiscoverResult",
    "InitializeResult",
    "EmptyResult",
    "Root",
    "CallToolParams",
    "CursorParams",
    "ReadResourceParams",
    "GetPromptParams",
    "CompleteParams",
    "InitializeParams",
    "SetLevelParams",
]

#: RFC 5424 severities, least to most severe, as MCP logging names them.
LOG_LEVELS: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]

Meta = dict[str, Any]


class _Wire(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """Base of every wire struct."""


class Icon(_Wire, kw_only=True):
    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None
    theme: str | None = None


class Implementation(_Wire, kw_only=True):
    """A client's or server's name and version."""

    name: str
    version: str = ""
    title: str | None = None
    description: str | None = None
    website_url: str | None = None
    icons: list[Icon] | None = None


class Annotations(_Wire, kw_only=True):
    audience: list[str] | None = None
    priority: float | None = None
    last_modified: str | None = None


# --- content ---------------------------------------------------------------------------


class TextContent(_Wire, kw_only=True, tag_field="type", tag="text"):
    text: str
    annotations: Annotations | None = None
    meta: Meta | None = field(default=None, name="_meta")


class ImageContent(_Wire, kw_only=True, tag_field="type", tag="image"):
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: Meta | None = field(default=None, name="_meta")


class AudioContent(_Wire, kw_only=True, tag_field="type", tag="audio"):
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: Meta | None = field(default=None, name="_meta")


class ResourceLink(_Wire, kw_only=True, tag_field="type", tag="resource_link"):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    meta: Meta | None = field(default=None, name="_meta")


class ResourceContents(_Wire, kw_only=True):
    """One piece of a resource: ``text`` for text, ``blob`` (base64) for binary."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None
    meta: Meta | None = field(default=None, name="_meta")


class EmbeddedResource(_Wire, kw_only=True, tag_field="type", tag="resource"):
    resource: ResourceContents
    annotations: Annotations | None = None
    meta: Meta | None = field(default=None, name="_meta")


Content = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource


# --- results -----------------------------------------------------------------------------


class Result(_Wire, kw_only=True):
    """Fields every result may carry. ``result_type`` is set on modern-era results."""

    meta: Meta | None = field(default=None, name="_meta")
    result_type: str | UnsetType = UNSET


class Cacheable(Result, kw_only=True):
    ttl_ms: int | UnsetType = UNSET
    cache_scope: Literal["public", "private"] | UnsetType = UNSET


class EmptyResult(Result, kw_only=True):
    pass


class ToolAnnotations(_Wire, kw_only=True):
    """Hints about a tool's behaviour (not guarantees)."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class Tool(_Wire, kw_only=True):
    name: str
    input_schema: dict[str, Any]
    title: str | None = None
    description: str | None = None
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    icons: list[Icon] | None = None
    meta: Meta | None = field(default=None, name="_meta")


class CallToolResult(Result, kw_only=True):
    """A tool's outcome. ``is_error`` marks a failed operation (not a protocol error)."""

    content: list[Content] = []
    structured_content: Any | UnsetType = UNSET
    is_error: bool = False


class ListToolsResult(Cacheable, kw_only=True):
    tools: list[Tool]
    next_cursor: str | None = None


class Resource(_Wire, kw_only=True):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None
    meta: Meta | None = field(default=None, name="_meta")


class ResourceTemplate(_Wire, kw_only=True):
    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None
    meta: Meta | None = field(default=None, name="_meta")


class ListResourcesResult(Cacheable, kw_only=True):
    resources: list[Resource]
    next_cursor: str | None = None


class ListResourceTemplatesResult(Cacheable, kw_only=True):
    resource_templates: list[ResourceTemplate]
    next_cursor: str | None = None


class ReadResourceResult(Cacheable, kw_only=True):
    contents: list[ResourceContents]


class PromptArgument(_Wire, kw_only=True):
    name: str
    title: str | None = None
    description: str | None = None
    required: bool | None = None


class Prompt(_Wire, kw_only=True):
    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[Icon] | None = None
    meta: Meta | None = field(default=None, name="_meta")


class PromptMessage(_Wire, kw_only=True):
    role: Literal["user", "assistant"]
    content: Content


class GetPromptResult(Result, kw_only=True):
    messages: list[PromptMessage]
    description: str | None = None


class ListPromptsResult(Cacheable, kw_only=True):
    prompts: list[Prompt]
    next_cursor: str | None = None


class Completion(_Wire, kw_only=True):
    values: list[str]
    total: int | None = None
    has_more: bool | None = None


class CompleteResult(Result, kw_only=True):
    completion: Completion


class DiscoverResult(Cacheable, kw_only=True):
    supported_versions: list[str]
    capabilities: dict[str, Any]
    instructions: str | None = None


class InitializeResult(Result, kw_only=True):
    protocol_version: str
    capabilities: dict[str, Any]
    server_info: Implementation
    instructions: str | None = None


class Root(_Wire, kw_only=True):
    uri: str
    name: str | None = None


# --- request params the server decodes -----------------------------------------------------


class Params(msgspec.Struct, kw_only=True, rename="camel"):
    meta: Meta | None = field(default=None, name="_meta")


class CallToolParams(Params, kw_only=True):
    name: str
    arguments: dict[str, Any] | None = None


class CursorParams(Params, kw_only=True):
    cursor: str | None = None


class ReadResourceParams(Params, kw_only=True):
    uri: str


class GetPromptParams(Params, kw_only=True):
    name: str
    arguments: dict[str, str] | None = None


class CompletionRef(msgspec.Struct, kw_only=True, rename="camel"):
    type: str
    name: str | None = None
    uri: str | None = None


class CompletionArgument(msgspec.Struct, kw_only=True):
    name: str
    value: str


class CompletionContext(msgspec.Struct, kw_only=True):
    arguments: dict[str, str] | None = None


class CompleteParams(Params, kw_only=True):
    ref: CompletionRef
    argument: CompletionArgument
    context: CompletionContext | None = None


class InitializeParams(Params, kw_only=True):
    protocol_version: str
    capabilities: dict[str, Any] = {}
    client_info: Implementation | None = None


class SetLevelParams(Params, kw_only=True):
    level: LogLevel
