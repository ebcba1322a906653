"""mcpkit: a Model Context Protocol SDK — server, client and transports.

The public surface is what ``__all__`` lists, imported from here. The subpackages
(``protocol``, ``runtime``, ``transports``, ``server``, ``client``) are the
implementation and may change; docs/design.md describes how they fit.
"""

from ._version import __version__
from .client.client import Client
from .client.options import ClientOptions, RequestOptions
from .protocol.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    REQUEST_TIMEOUT,
    ConnectionClosed,
    HttpError,
    McpError,
    RequestTimeout,
    ToolError,
    flatten_text,
)
from .protocol.types import (
    AudioContent,
    CallToolResult,
    CompleteResult,
    Completion,
    DiscoverResult,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    Implementation,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    Prompt,
    PromptArgument,
    PromptMessage,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceLink,
    ResourceTemplate,
    Root,
    TextContent,
    Tool,
    ToolAnnotations,
)
from .protocol.versions import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS
from .server.context import Context
from .server.server import CallNext, Middleware, Server
from .transports.base import Transport
from .transports.http.client.transport import HttpTransport
from .transports.http.server.sessions import EventStore, InMemoryEventStore
from .transports.process import StdioTransport

__all__ = [
    "__version__",
    # server
    "Server",
    "Context",
    "Middleware",
    "CallNext",
    # client
    "Client",
    "ClientOptions",
    "RequestOptions",
    # transports
    "Transport",
    "StdioTransport",
    "HttpTransport",
    "EventStore",
    "InMemoryEventStore",
    # errors
    "McpError",
    "RequestTimeout",
    "ConnectionClosed",
    "ToolError",
    "HttpError",
    "flatten_text",
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "INTERNAL_ERROR",
    "REQUEST_TIMEOUT",
    "REQUEST_CANCELLED",
    # wire types
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "Implementation",
    "Tool",
    "ToolAnnotations",
    "CallToolResult",
    "ListToolsResult",
    "TextContent",
    "ImageContent",
    "AudioContent",
    "ResourceLink",
    "EmbeddedResource",
    "Resource",
    "ResourceTemplate",
    "ResourceContents",
    "ListResourcesResult",
    "ListResourceTemplatesResult",
    "ReadResourceResult",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "GetPromptResult",
    "ListPromptsResult",
    "Completion",
    "CompleteResult",
    "DiscoverResult",
    "Root",
]
