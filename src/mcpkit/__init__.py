"""mcpkit: a Model Context Protocol SDK — server, client and transports.

The public surface is what ``__all__`` lists; everything in ``mcpkit._*`` modules is
private and may change.
"""

__version__ = "0.1.0"

from ._client import Client, ClientOptions, RequestOptions
from ._context import Context
from ._errors import (
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
from ._http_client import HttpTransport
from ._http_sessions import EventStore, InMemoryEventStore
from ._server import CallNext, Middleware, Server
from ._transport import StdioTransport, Transport
from ._types import (
    LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
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
