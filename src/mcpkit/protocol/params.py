"""The params of the requests the server decodes (``tools/call``, ``resources/read``,
``prompts/get``, ``completion/complete``, ``initialize``, ``logging/setLevel``, the
paginated lists): each method's own members. ``_meta`` is not among them: the request's
head reads it (:mod:`.head`), and a decode of these skips it. Re-exported by :mod:`.types`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .wire import Implementation, LogLevel

__all__ = [
    "Params",
    "CallToolParams",
    "CursorParams",
    "ReadResourceParams",
    "GetPromptParams",
    "CompletionRef",
    "CompletionArgument",
    "CompletionContext",
    "CompleteParams",
    "InitializeParams",
    "SetLevelParams",
]


class Params(msgspec.Struct, kw_only=True, rename="camel"):
    """The base of every request's own params (none of its own: ``ping``,
    ``server/discover``)."""


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
