"""mcpkit: a Model Context Protocol SDK — server, client and transports.

The public surface is what ``__all__`` lists, imported from here. The subpackages
(``protocol``, ``runtime``, ``transports``, ``server``, ``client``) are the
implementation and may change; docs/design.md describes how they fit.

Names load on first use (PEP 562): ``import mcpkit`` costs next to nothing, and a
program that only uses the client never imports the server's modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .auth.client.errors import OAuthError
    from .auth.client.flow import OAuthClientAuth
    from .auth.client.loopback import LoopbackRedirect, RedirectHandler
    from .auth.client.settings import OAuthClientMetadata, PreRegisteredClient
    from .auth.client.storage import InMemoryTokenStorage, TokenStorage
    from .auth.identity import AccessToken
    from .auth.server import ResourceServer
    from .auth.verifiers import FunctionVerifier, IntrospectionVerifier, InvalidToken, JWTVerifier, VerifierUnavailable
    from .client.client import Client
    from .client.events import (
        AttemptStarted,
        AttemptTimedOut,
        ClientEvent,
        ConnectionLost,
        Reconnected,
        ReconnectFailed,
        ReconnectScheduled,
        RetryScheduled,
        ServerRestarted,
    )
    from .client.options import ClientOptions, RequestOptions
    from .client.results import UnexpectedResultType
    from .client.retry import RetriesExhausted, RetryPolicy
    from .client.subscriptions import Subscription, SubscriptionEvent
    from .client.sync import SyncClient
    from .client.tasks import TaskHandle
    from .protocol.errors import (
        INTERNAL_ERROR,
        INVALID_PARAMS,
        INVALID_REQUEST,
        METHOD_NOT_FOUND,
        MISSING_CLIENT_CAPABILITY,
        PARSE_ERROR,
        REQUEST_CANCELLED,
        REQUEST_TIMEOUT,
        URL_ELICITATION_REQUIRED,
        ConnectionClosed,
        HttpError,
        McpError,
        RequestTimeout,
        ToolError,
        flatten_text,
    )
    from .protocol.interactive import (
        CreateMessageParams,
        CreateMessageResult,
        ElicitRequestParams,
        ElicitResult,
        SamplingMessage,
        UrlElicitationRequired,
    )
    from .protocol.tasks import Task
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
    from .stores.events import EventStore, InMemoryEventStore
    from .stores.redis import RedisStore
    from .stores.sessions import InMemorySessionStore, NodeMessage, SessionRecord, SessionStore, StoreUnavailable
    from .stores.tasks import InMemoryTaskStore, TaskRecord, TaskStore, TaskStoreFull
    from .transports.base import Transport
    from .transports.http.sse.client import SseTransport
    from .transports.http.transport import HttpTransport
    from .transports.restart import RestartPolicy
    from .transports.stdio.process import StdioTransport

#: Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "OAuthClientAuth": ".auth.client.flow",
    "OAuthClientMetadata": ".auth.client.settings",
    "PreRegisteredClient": ".auth.client.settings",
    "TokenStorage": ".auth.client.storage",
    "InMemoryTokenStorage": ".auth.client.storage",
    "RedirectHandler": ".auth.client.loopback",
    "LoopbackRedirect": ".auth.client.loopback",
    "OAuthError": ".auth.client.errors",
    "AccessToken": ".auth.identity",
    "ResourceServer": ".auth.server",
    "FunctionVerifier": ".auth.verifiers",
    "IntrospectionVerifier": ".auth.verifiers",
    "InvalidToken": ".auth.verifiers",
    "JWTVerifier": ".auth.verifiers",
    "VerifierUnavailable": ".auth.verifiers",
    "Client": ".client.client",
    "SyncClient": ".client.sync",
    "ClientEvent": ".client.events",
    "AttemptStarted": ".client.events",
    "AttemptTimedOut": ".client.events",
    "RetryScheduled": ".client.events",
    "ConnectionLost": ".client.events",
    "ServerRestarted": ".client.events",
    "ReconnectScheduled": ".client.events",
    "Reconnected": ".client.events",
    "ReconnectFailed": ".client.events",
    "RetryPolicy": ".client.retry",
    "RetriesExhausted": ".client.retry",
    "ClientOptions": ".client.options",
    "RequestOptions": ".client.options",
    "UnexpectedResultType": ".client.results",
    "Subscription": ".client.subscriptions",
    "SubscriptionEvent": ".client.subscriptions",
    "TaskHandle": ".client.tasks",
    "Task": ".protocol.tasks",
    "TaskStore": ".stores.tasks",
    "InMemoryTaskStore": ".stores.tasks",
    "TaskRecord": ".stores.tasks",
    "TaskStoreFull": ".stores.tasks",
    "CreateMessageParams": ".protocol.interactive",
    "CreateMessageResult": ".protocol.interactive",
    "ElicitRequestParams": ".protocol.interactive",
    "ElicitResult": ".protocol.interactive",
    "SamplingMessage": ".protocol.interactive",
    "UrlElicitationRequired": ".protocol.interactive",
    "MISSING_CLIENT_CAPABILITY": ".protocol.errors",
    "URL_ELICITATION_REQUIRED": ".protocol.errors",
    "INTERNAL_ERROR": ".protocol.errors",
    "INVALID_PARAMS": ".protocol.errors",
    "INVALID_REQUEST": ".protocol.errors",
    "METHOD_NOT_FOUND": ".protocol.errors",
    "PARSE_ERROR": ".protocol.errors",
    "REQUEST_CANCELLED": ".protocol.errors",
    "REQUEST_TIMEOUT": ".protocol.errors",
    "ConnectionClosed": ".protocol.errors",
    "HttpError": ".protocol.errors",
    "McpError": ".protocol.errors",
    "RequestTimeout": ".protocol.errors",
    "ToolError": ".protocol.errors",
    "flatten_text": ".protocol.errors",
    "AudioContent": ".protocol.types",
    "CallToolResult": ".protocol.types",
    "CompleteResult": ".protocol.types",
    "Completion": ".protocol.types",
    "DiscoverResult": ".protocol.types",
    "EmbeddedResource": ".protocol.types",
    "GetPromptResult": ".protocol.types",
    "ImageContent": ".protocol.types",
    "Implementation": ".protocol.types",
    "ListPromptsResult": ".protocol.types",
    "ListResourcesResult": ".protocol.types",
    "ListResourceTemplatesResult": ".protocol.types",
    "ListToolsResult": ".protocol.types",
    "Prompt": ".protocol.types",
    "PromptArgument": ".protocol.types",
    "PromptMessage": ".protocol.types",
    "ReadResourceResult": ".protocol.types",
    "Resource": ".protocol.types",
    "ResourceContents": ".protocol.types",
    "ResourceLink": ".protocol.types",
    "ResourceTemplate": ".protocol.types",
    "Root": ".protocol.types",
    "TextContent": ".protocol.types",
    "Tool": ".protocol.types",
    "ToolAnnotations": ".protocol.types",
    "LATEST_PROTOCOL_VERSION": ".protocol.versions",
    "SUPPORTED_PROTOCOL_VERSIONS": ".protocol.versions",
    "Context": ".server.context",
    "CallNext": ".server.server",
    "Middleware": ".server.server",
    "Server": ".server.server",
    "Transport": ".transports.base",
    "HttpTransport": ".transports.http.transport",
    "SseTransport": ".transports.http.sse.client",
    "EventStore": ".stores.events",
    "InMemoryEventStore": ".stores.events",
    "SessionStore": ".stores.sessions",
    "InMemorySessionStore": ".stores.sessions",
    "SessionRecord": ".stores.sessions",
    "NodeMessage": ".stores.sessions",
    "StoreUnavailable": ".stores.sessions",
    "RedisStore": ".stores.redis",
    "StdioTransport": ".transports.stdio.process",
    "RestartPolicy": ".transports.restart",
}


__all__ = [
    "__version__",
    # server
    "Server",
    "Context",
    "Middleware",
    "CallNext",
    # client
    "Client",
    "SyncClient",
    "ClientOptions",
    "RequestOptions",
    "Subscription",
    "SubscriptionEvent",
    "TaskHandle",
    "RetryPolicy",
    "ClientEvent",
    "AttemptStarted",
    "AttemptTimedOut",
    "RetryScheduled",
    "ConnectionLost",
    "ServerRestarted",
    "ReconnectScheduled",
    "Reconnected",
    "ReconnectFailed",
    # tasks (docs/tasks.md)
    "Task",
    "TaskStore",
    "InMemoryTaskStore",
    "TaskRecord",
    "TaskStoreFull",
    # transports
    "Transport",
    "StdioTransport",
    "RestartPolicy",
    "HttpTransport",
    "SseTransport",
    "EventStore",
    "InMemoryEventStore",
    # several nodes (docs/deploy.md)
    "SessionStore",
    "InMemorySessionStore",
    "SessionRecord",
    "NodeMessage",
    "StoreUnavailable",
    "RedisStore",
    # authorization
    "ResourceServer",
    "AccessToken",
    "JWTVerifier",
    "IntrospectionVerifier",
    "FunctionVerifier",
    "InvalidToken",
    "VerifierUnavailable",
    # authorization (client side)
    "OAuthClientAuth",
    "OAuthClientMetadata",
    "PreRegisteredClient",
    "TokenStorage",
    "InMemoryTokenStorage",
    "RedirectHandler",
    "LoopbackRedirect",
    "OAuthError",
    # errors
    "McpError",
    "RequestTimeout",
    "ConnectionClosed",
    "RetriesExhausted",
    "ToolError",
    "HttpError",
    "UrlElicitationRequired",
    "UnexpectedResultType",
    "flatten_text",
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "INTERNAL_ERROR",
    "REQUEST_TIMEOUT",
    "REQUEST_CANCELLED",
    "MISSING_CLIENT_CAPABILITY",
    "URL_ELICITATION_REQUIRED",
    # asking the client
    "ElicitRequestParams",
    "ElicitResult",
    "CreateMessageParams",
    "CreateMessageResult",
    "SamplingMessage",
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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
