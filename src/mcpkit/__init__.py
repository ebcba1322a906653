"""mcpkit: a Model Context Protocol SDK — server, client and transports.

The public surface is what ``__all__`` lists, imported from here: the names of
:data:`_PUBLIC`, the one table of them, by topic and defining module (docs/api.md
documents the same names; tests/unit/test_package_face.py checks that the type
checkers' block below names exactly these). The subpackages
(``protocol``, ``runtime``, ``transports``, ``server``, ``client``, ``host``) are the
implementation and may change; docs/design.md describes how they fit.

Names load on first use (PEP 562): ``import mcpkit`` costs next to nothing, and a
program that only uses the client never imports the server's modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

from ._version import __version__

if TYPE_CHECKING:  # what type checkers see: the names of _PUBLIC, re-exported explicitly
    from .auth.client.errors import OAuthError as OAuthError
    from .auth.client.flow import OAuthClientAuth as OAuthClientAuth
    from .auth.client.loopback import LoopbackRedirect as LoopbackRedirect, RedirectHandler as RedirectHandler
    from .auth.client.settings import OAuthClientMetadata as OAuthClientMetadata, PreRegisteredClient as PreRegisteredClient
    from .auth.client.storage import InMemoryTokenStorage as InMemoryTokenStorage, TokenStorage as TokenStorage
    from .auth.client.targets import TargetPolicy as TargetPolicy
    from .auth.client.token_exchange import IdJagExchange as IdJagExchange
    from .auth.dpop import DPoPChecker as DPoPChecker
    from .auth.identity import AccessToken as AccessToken
    from .auth.proxy.proxy import OAuthProxy as OAuthProxy
    from .auth.proxy.store import InMemoryProxyStore as InMemoryProxyStore, ProxyStore as ProxyStore
    from .auth.proxy.upstream import UpstreamProvider as UpstreamProvider
    from .auth.server import ResourceServer as ResourceServer
    from .auth.verifiers import (
        FunctionVerifier as FunctionVerifier,
        IntrospectionVerifier as IntrospectionVerifier,
        InvalidToken as InvalidToken,
        JWTVerifier as JWTVerifier,
        VerifierUnavailable as VerifierUnavailable,
    )
    from .client.apps import AppBridge as AppBridge, ToolUi as ToolUi
    from .client.client import Client as Client
    from .client.events import (
        AttemptStarted as AttemptStarted,
        AttemptTimedOut as AttemptTimedOut,
        ClientEvent as ClientEvent,
        ConnectionLost as ConnectionLost,
        Reconnected as Reconnected,
        ReconnectFailed as ReconnectFailed,
        ReconnectScheduled as ReconnectScheduled,
        RetryScheduled as RetryScheduled,
        ServerRestarted as ServerRestarted,
    )
    from .client.options import ClientOptions as ClientOptions, RequestOptions as RequestOptions
    from .client.results import UnexpectedResultType as UnexpectedResultType
    from .client.retry import RetriesExhausted as RetriesExhausted, RetryPolicy as RetryPolicy
    from .client.skills import (
        LoadedSkill as LoadedSkill,
        SkillFile as SkillFile,
        SkillVerificationError as SkillVerificationError,
    )
    from .client.subscriptions import Subscription as Subscription, SubscriptionEvent as SubscriptionEvent
    from .client.sync import SyncClient as SyncClient
    from .client.tasks import TaskHandle as TaskHandle
    from .host.config import ConfigError as ConfigError, ServerConfig as ServerConfig, load_config as load_config
    from .host.group import ClientGroup as ClientGroup
    from .host.llm import LlmTools as LlmTools, ToolCall as ToolCall
    from .host.member import ServerState as ServerState
    from .host.names import NameCollision as NameCollision
    from .protocol.app_views import UiHostContext as UiHostContext
    from .protocol.apps import (
        APPS_EXTENSION as APPS_EXTENSION,
        UI_MIME_TYPE as UI_MIME_TYPE,
        UiCsp as UiCsp,
        UiPermissions as UiPermissions,
        UiResourceMeta as UiResourceMeta,
    )
    from .protocol.errors import (
        INTERNAL_ERROR as INTERNAL_ERROR,
        INVALID_PARAMS as INVALID_PARAMS,
        INVALID_REQUEST as INVALID_REQUEST,
        METHOD_NOT_FOUND as METHOD_NOT_FOUND,
        MISSING_CLIENT_CAPABILITY as MISSING_CLIENT_CAPABILITY,
        PARSE_ERROR as PARSE_ERROR,
        REQUEST_CANCELLED as REQUEST_CANCELLED,
        REQUEST_TIMEOUT as REQUEST_TIMEOUT,
        URL_ELICITATION_REQUIRED as URL_ELICITATION_REQUIRED,
        ConnectionClosed as ConnectionClosed,
        HttpError as HttpError,
        McpError as McpError,
        RequestTimeout as RequestTimeout,
        ToolError as ToolError,
        flatten_text as flatten_text,
    )
    from .protocol.interactive import (
        CreateMessageParams as CreateMessageParams,
        CreateMessageResult as CreateMessageResult,
        ElicitRequestParams as ElicitRequestParams,
        ElicitResult as ElicitResult,
        SamplingMessage as SamplingMessage,
        UrlElicitationRequired as UrlElicitationRequired,
    )
    from .protocol.skills import (
        DirectoryReadResult as DirectoryReadResult,
        ListSkillsResult as ListSkillsResult,
        Skill as Skill,
        SkillResource as SkillResource,
    )
    from .protocol.tasks import Task as Task
    from .protocol.types import (
        AudioContent as AudioContent,
        CallToolResult as CallToolResult,
        CompleteResult as CompleteResult,
        Completion as Completion,
        DiscoverResult as DiscoverResult,
        EmbeddedResource as EmbeddedResource,
        GetPromptResult as GetPromptResult,
        ImageContent as ImageContent,
        Implementation as Implementation,
        ListPromptsResult as ListPromptsResult,
        ListResourcesResult as ListResourcesResult,
        ListResourceTemplatesResult as ListResourceTemplatesResult,
        ListToolsResult as ListToolsResult,
        Prompt as Prompt,
        PromptArgument as PromptArgument,
        PromptMessage as PromptMessage,
        ReadResourceResult as ReadResourceResult,
        Resource as Resource,
        ResourceContents as ResourceContents,
        ResourceLink as ResourceLink,
        ResourceTemplate as ResourceTemplate,
        Root as Root,
        TextContent as TextContent,
        Tool as Tool,
        ToolAnnotations as ToolAnnotations,
    )
    from .protocol.versions import (
        LATEST_PROTOCOL_VERSION as LATEST_PROTOCOL_VERSION,
        SUPPORTED_PROTOCOL_VERSIONS as SUPPORTED_PROTOCOL_VERSIONS,
    )
    from .proxy.proxy import Proxy as Proxy, proxy_of as proxy_of
    from .server.context import Context as Context
    from .server.media import Audio as Audio, File as File, Image as Image
    from .server.server import CallNext as CallNext, Middleware as Middleware, Server as Server
    from .server.transform import ArgTransform as ArgTransform
    from .stores.errors import StoreUnavailable as StoreUnavailable
    from .stores.events import EventStore as EventStore, InMemoryEventStore as InMemoryEventStore
    from .stores.redis import RedisStore as RedisStore
    from .stores.sessions import (
        InMemorySessionStore as InMemorySessionStore,
        NodeMessage as NodeMessage,
        SessionRecord as SessionRecord,
        SessionStore as SessionStore,
    )
    from .stores.tasks import (
        InMemoryTaskStore as InMemoryTaskStore,
        TaskRecord as TaskRecord,
        TaskStore as TaskStore,
        TaskStoreFull as TaskStoreFull,
    )
    from .transports.base import Transport as Transport
    from .transports.http.sse.client import SseTransport as SseTransport
    from .transports.http.transport import HttpTransport as HttpTransport
    from .transports.restart import RestartPolicy as RestartPolicy
    from .transports.stdio.process import StdioTransport as StdioTransport

#: The public surface: topic -> the module that defines some of its names -> those names.
_PUBLIC: Final[dict[str, dict[str, tuple[str, ...]]]] = {
    "server": {
        ".server.server": ("Server", "Middleware", "CallNext"),
        ".server.context": ("Context",),
        ".server.transform": ("ArgTransform",),
        ".server.media": ("Image", "Audio", "File"),
    },
    "client": {
        ".client.client": ("Client",),
        ".client.sync": ("SyncClient",),
        ".client.options": ("ClientOptions", "RequestOptions"),
        ".client.subscriptions": ("Subscription", "SubscriptionEvent"),
        ".client.tasks": ("TaskHandle",),
        ".client.retry": ("RetryPolicy",),
        ".client.events": (
            "ClientEvent",
            "AttemptStarted",
            "AttemptTimedOut",
            "RetryScheduled",
            "ConnectionLost",
            "ServerRestarted",
            "ReconnectScheduled",
            "Reconnected",
            "ReconnectFailed",
        ),
    },
    "hosts: many servers (docs/howto/host.md)": {
        ".host.group": ("ClientGroup",),
        ".host.config": ("ServerConfig", "load_config", "ConfigError"),
        ".host.member": ("ServerState",),
        ".host.names": ("NameCollision",),
        ".host.llm": ("LlmTools", "ToolCall"),
    },
    "MCP Apps (docs/apps.md)": {
        ".protocol.apps": ("APPS_EXTENSION", "UI_MIME_TYPE", "UiCsp", "UiPermissions", "UiResourceMeta"),
        ".protocol.app_views": ("UiHostContext",),
        ".client.apps": ("ToolUi", "AppBridge"),
    },
    "proxies (docs/howto/proxies.md)": {
        ".proxy.proxy": ("Proxy", "proxy_of"),
    },
    "tasks (docs/tasks.md)": {
        ".protocol.tasks": ("Task",),
        ".stores.tasks": ("TaskStore", "InMemoryTaskStore", "TaskRecord", "TaskStoreFull"),
    },
    "skills, client side (docs/skills-client.md)": {
        ".client.skills": ("LoadedSkill", "SkillFile", "SkillVerificationError"),
        ".protocol.skills": ("Skill", "SkillResource", "ListSkillsResult", "DirectoryReadResult"),
    },
    "transports": {
        ".transports.base": ("Transport",),
        ".transports.stdio.process": ("StdioTransport",),
        ".transports.restart": ("RestartPolicy",),
        ".transports.http.transport": ("HttpTransport",),
        ".transports.http.sse.client": ("SseTransport",),
        ".stores.events": ("EventStore", "InMemoryEventStore"),
    },
    "several nodes (docs/deploy.md)": {
        ".stores.sessions": ("SessionStore", "InMemorySessionStore", "SessionRecord", "NodeMessage"),
        ".stores.errors": ("StoreUnavailable",),
        ".stores.redis": ("RedisStore",),
    },
    "authorization": {
        ".auth.server": ("ResourceServer",),
        ".auth.identity": ("AccessToken",),
        ".auth.dpop": ("DPoPChecker",),
        ".auth.verifiers": ("JWTVerifier", "IntrospectionVerifier", "FunctionVerifier", "InvalidToken", "VerifierUnavailable"),
    },
    "an OAuth proxy in front of an identity provider (docs/auth.md)": {
        ".auth.proxy.proxy": ("OAuthProxy",),
        ".auth.proxy.upstream": ("UpstreamProvider",),
        ".auth.proxy.store": ("ProxyStore", "InMemoryProxyStore"),
    },
    "authorization (client side)": {
        ".auth.client.flow": ("OAuthClientAuth",),
        ".auth.client.settings": ("OAuthClientMetadata", "PreRegisteredClient"),
        ".auth.client.storage": ("TokenStorage", "InMemoryTokenStorage"),
        ".auth.client.targets": ("TargetPolicy",),
        ".auth.client.token_exchange": ("IdJagExchange",),
        ".auth.client.loopback": ("RedirectHandler", "LoopbackRedirect"),
        ".auth.client.errors": ("OAuthError",),
    },
    "errors": {
        ".protocol.errors": (
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
            "MISSING_CLIENT_CAPABILITY",
            "URL_ELICITATION_REQUIRED",
        ),
        ".client.retry": ("RetriesExhausted",),
        ".protocol.interactive": ("UrlElicitationRequired",),
        ".client.results": ("UnexpectedResultType",),
    },
    "asking the client": {
        ".protocol.interactive": (
            "ElicitRequestParams",
            "ElicitResult",
            "CreateMessageParams",
            "CreateMessageResult",
            "SamplingMessage",
        ),
    },
    "wire types": {
        ".protocol.versions": ("LATEST_PROTOCOL_VERSION", "SUPPORTED_PROTOCOL_VERSIONS"),
        ".protocol.types": (
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
        ),
    },
}

#: Public name -> the module that defines it (loaded on first use).
_EXPORTS: Final = {name: module for modules in _PUBLIC.values() for module, names in modules.items() for name in names}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
