"""The params of the requests the server decodes (``tools/call``, ``resources/read``,
``prompts/get``, ``completion/complete``, ``initialize``, ``logging/setLevel``, the
paginated lists). Re-exported by :mod:`.types`.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import field

from .wire import Implementation, LogLevel, Meta

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
