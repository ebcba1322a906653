"""MCP wire types: typed values decoded once, camelCase on the wire, snake_case here.

These are msgspec structs: decoding validates shapes in C, encoding never re-validates
what this process built. Unknown fields from a peer are ignored, so newer peers stay
readable.

This module holds the features' descriptions and the results; the shared base is in
:mod:`.wire`, the content blocks in :mod:`.content` and the request params in
:mod:`.params`, all re-exported here: import any wire type from this module.
"""

from __future__ import annotations

from typing import Any, Literal

from msgspec import field

from .content import AudioContent, Content, EmbeddedResource, ImageContent, Resource, ResourceContents, ResourceLink, TextContent
from .params import (
    CallToolParams,
    CompleteParams,
    CompletionArgument as CompletionArgument,
    CompletionContext as CompletionContext,
    CompletionRef as CompletionRef,
    CursorParams,
    GetPromptParams,
    InitializeParams,
    Params,
    ReadResourceParams,
    SetLevelParams,
)
from .wire import LOG_LEVELS, Annotations, Icon, Implementation, LogLevel, Meta as Meta, WireStruct as WireStruct

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


# --- results -----------------------------------------------------------------------------


class Result(WireStruct, kw_only=True):
    """Fields every result may carry. ``result_type`` is set on modern-era results."""

    meta: Meta | None = field(default=None, name="_meta")
    result_type: str | None = None


class Cacheable(Result, kw_only=True):
    ttl_ms: int | None = None
    cache_scope: Literal["public", "private"] | None = None


class EmptyResult(Result, kw_only=True):
    pass


class ToolAnnotations(WireStruct, kw_only=True):
    """Hints about a tool's behaviour: not guarantees; trust them as far as you trust
    the server. Clients use them to decide what to confirm with the user and what to
    retry (docs/errors.md, "Retrying safely").

    Attributes:
        title: A human-readable name for the tool.
        read_only_hint: The tool does not change anything.
        destructive_hint: The tool may destroy or overwrite things (meaningful when not read-only).
        idempotent_hint: Calling it again with the same arguments has no further effect.
        open_world_hint: The tool reaches outside systems (the web, other services).
    """

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class Tool(WireStruct, kw_only=True):
    """A tool as ``tools/list`` describes it: what a client shows the model.

    ``@server.tool`` builds it from the function (name, docstring, type hints);
    ``server.add_tool`` from a raw JSON Schema.

    Attributes:
        name: The name a ``tools/call`` uses.
        input_schema: JSON Schema of the arguments (an object schema).
        title: A human-readable name.
        description: What the tool does, for the model.
        output_schema: JSON Schema of ``structured_content``, for tools with typed results.
        annotations: Behaviour hints (read-only, idempotent, …).
        icons: Icons a client may show.
        meta: The tool's ``_meta``.
    """

    name: str
    input_schema: dict[str, Any]
    title: str | None = None
    description: str | None = None
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    icons: list[Icon] | None = None
    meta: Meta | None = field(default=None, name="_meta")


class CallToolResult(Result, kw_only=True):
    """A tool's outcome: the result of ``tools/call``.

    Return one from a tool for full control over what is sent; a client receives one
    for every call that ran, failed or not.

    Attributes:
        content: Content blocks for the model: text, images, audio, resources.
        structured_content: The typed result, for tools that declare an ``output_schema``
            (None when absent).
        is_error: True for a failed operation: the tool ran and could not do its job.
            This is not a protocol error; the model reads the content and can react.
    """

    content: list[Content] = []  # noqa: RUF012 - a msgspec struct: each instance gets a copy
    structured_content: Any = None
    is_error: bool = False


class ListToolsResult(Cacheable, kw_only=True):
    """The result of ``tools/list``: one page of tools.

    Attributes:
        tools: The tools on this page.
        next_cursor: Pass it back as ``cursor`` for the next page; None on the last page.
    """

    tools: list[Tool]
    next_cursor: str | None = None


class ResourceTemplate(WireStruct, kw_only=True):
    """A family of resources, as ``resources/templates/list`` describes it.

    Attributes:
        uri_template: An RFC 6570 URI template, such as ``"notes://note/{title}"``.
        name: Its name.
        title: A human-readable title.
        description: What its resources hold.
        mime_type: Their media type, if known.
        annotations: Optional hints for the client.
        icons: Icons a client may show.
        meta: The template's ``_meta``.
    """

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None
    meta: Meta | None = field(default=None, name="_meta")


class ListResourcesResult(Cacheable, kw_only=True):
    """The result of ``resources/list``: one page of resources.

    Attributes:
        resources: The resources on this page.
        next_cursor: Pass it back as ``cursor`` for the next page; None on the last page.
    """

    resources: list[Resource]
    next_cursor: str | None = None


class ListResourceTemplatesResult(Cacheable, kw_only=True):
    """The result of ``resources/templates/list``: one page of templates.

    Attributes:
        resource_templates: The templates on this page.
        next_cursor: Pass it back as ``cursor`` for the next page; None on the last page.
    """

    resource_templates: list[ResourceTemplate]
    next_cursor: str | None = None


class ReadResourceResult(Cacheable, kw_only=True):
    """The result of ``resources/read``.

    Attributes:
        contents: What the resource holds, usually one item: ``text`` or a base64 ``blob``.
    """

    contents: list[ResourceContents]


class PromptArgument(WireStruct, kw_only=True):
    """One argument of a prompt.

    Attributes:
        name: The argument's name.
        title: A human-readable name.
        description: What to give, from the function's ``Args:`` docstring section.
        required: Whether ``prompts/get`` must give it (parameters without a default).
    """

    name: str
    title: str | None = None
    description: str | None = None
    required: bool | None = None


class Prompt(WireStruct, kw_only=True):
    """A prompt as ``prompts/list`` describes it.

    Attributes:
        name: The name a ``prompts/get`` uses.
        title: A human-readable name.
        description: What the prompt is for.
        arguments: Its arguments.
        icons: Icons a client may show.
        meta: The prompt's ``_meta``.
    """

    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[Icon] | None = None
    meta: Meta | None = field(default=None, name="_meta")


class PromptMessage(WireStruct, kw_only=True):
    """One message of a prompt.

    Attributes:
        role: ``"user"`` or ``"assistant"``.
        content: One content block (text, image, audio, a resource link or an embedded resource).
    """

    role: Literal["user", "assistant"]
    content: Content


class GetPromptResult(Result, kw_only=True):
    """The result of ``prompts/get``: the prompt's messages, filled in.

    Attributes:
        messages: The messages, in order.
        description: A description of this rendering of the prompt.
    """

    messages: list[PromptMessage]
    description: str | None = None


class ListPromptsResult(Cacheable, kw_only=True):
    """The result of ``prompts/list``: one page of prompts.

    Attributes:
        prompts: The prompts on this page.
        next_cursor: Pass it back as ``cursor`` for the next page; None on the last page.
    """

    prompts: list[Prompt]
    next_cursor: str | None = None


class Completion(WireStruct, kw_only=True):
    """Suggested values for an argument (at most 100 are sent).

    Attributes:
        values: The suggestions, best first.
        total: How many there are in all, if known.
        has_more: Whether there are more than ``values`` holds.
    """

    values: list[str]
    total: int | None = None
    has_more: bool | None = None


class CompleteResult(Result, kw_only=True):
    """The result of ``completion/complete``.

    Attributes:
        completion: The suggested values.
    """

    completion: Completion


class DiscoverResult(Cacheable, kw_only=True):
    """The result of ``server/discover`` (modern era): what a server speaks and offers.

    Attributes:
        supported_versions: The protocol revisions the server speaks, newest first.
        capabilities: The server's capabilities (``tools``, ``resources``, ``logging``, …).
        instructions: The server's instructions for the model, if any.
    """

    supported_versions: list[str]
    capabilities: dict[str, Any]
    instructions: str | None = None


class InitializeResult(Result, kw_only=True):
    protocol_version: str
    capabilities: dict[str, Any]
    server_info: Implementation
    instructions: str | None = None


class Root(WireStruct, kw_only=True):
    """A root: a directory or location the client lets servers work in.

    Attributes:
        uri: Its URI, a ``file://`` URI for a directory.
        name: A human-readable name.
    """

    uri: str
    name: str | None = None
