"""The public constants, each pinned to the value the specification or docs/errors.md gives
it (src/mcpkit/protocol/errors.py, src/mcpkit/protocol/versions.py).

mutmut never mutates module-level code, so a changed constant would pass the mutation gate
and every test that compares against the constant rather than a literal: here each one is
compared with the literal a peer sees on the wire. The values come from the specification's
schema (``schema/2026-07-28/schema.ts``: ``PARSE_ERROR = -32700`` ... ``INTERNAL_ERROR =
-32603``, ``HEADER_MISMATCH = -32020``, ``MISSING_REQUIRED_CLIENT_CAPABILITY = -32021``,
``UNSUPPORTED_PROTOCOL_VERSION = -32022``; ``schema/2025-11-25/schema.ts``:
``URL_ELICITATION_REQUIRED = -32042``) and, for mcpkit's own, from docs/errors.md's table of
codes and docs/limits.md.
"""

from __future__ import annotations

import pytest

import mcpkit
import mcpkit.protocol.errors as errors
import mcpkit.protocol.versions as versions
from mcpkit import Client, ClientOptions, McpError, RequestTimeout, Server
from support.eras import LEGACY, MODERN

#: Every public error code of mcpkit.protocol.errors and the value the spec or the docs give it.
CODES = {
    "PARSE_ERROR": -32700,  # JSON-RPC 2.0 / schema.ts
    "INVALID_REQUEST": -32600,  # JSON-RPC 2.0 / schema.ts
    "METHOD_NOT_FOUND": -32601,  # JSON-RPC 2.0 / schema.ts
    "INVALID_PARAMS": -32602,  # JSON-RPC 2.0 / schema.ts
    "INTERNAL_ERROR": -32603,  # JSON-RPC 2.0 / schema.ts
    "REQUEST_TIMEOUT": -32001,  # docs/errors.md, docs/api.md: RequestTimeout's code
    "REQUEST_CANCELLED": -32800,  # docs/errors.md, docs/api.md
    "HEADER_MISMATCH": -32020,  # schema.ts 2026-07-28
    "MISSING_CLIENT_CAPABILITY": -32021,  # schema.ts 2026-07-28: MISSING_REQUIRED_CLIENT_CAPABILITY
    "UNSUPPORTED_PROTOCOL_VERSION": -32022,  # schema.ts 2026-07-28
    "URL_ELICITATION_REQUIRED": -32042,  # schema.ts 2025-11-25
}

#: The other public constants of the module: the limits docs/limits.md states.
LIMITS = {"DEFAULT_MAX_ERROR_TEXT": 1024, "MAX_ECHO": 256}


@pytest.mark.parametrize(("name", "value"), sorted(CODES.items()))
def test_each_error_code_has_its_specified_value(name: str, value: int) -> None:
    constant = getattr(errors, name)
    assert type(constant) is int
    assert constant == value


@pytest.mark.parametrize(("name", "value"), sorted(LIMITS.items()))
def test_each_documented_limit_has_its_documented_value(name: str, value: int) -> None:
    assert getattr(errors, name) == value


def test_every_public_constant_is_pinned_here() -> None:
    """A constant added to the module's ``__all__`` without a value here fails: pin it."""
    public = {name for name in errors.__all__ if name.isupper()}
    assert public == set(CODES) | set(LIMITS)


@pytest.mark.parametrize("name", [n for n in mcpkit.__all__ if n in CODES])
def test_the_top_level_exports_are_the_same_constants(name: str) -> None:
    assert getattr(mcpkit, name) == CODES[name]
    assert getattr(mcpkit, name) is getattr(errors, name)


def test_the_top_level_exports_every_code_docs_api_lists() -> None:
    # docs/api.md lists these under mcpkit; the others are mcpkit.protocol.errors only
    exported = {
        "PARSE_ERROR",
        "INVALID_REQUEST",
        "METHOD_NOT_FOUND",
        "INVALID_PARAMS",
        "INTERNAL_ERROR",
        "REQUEST_TIMEOUT",
        "REQUEST_CANCELLED",
        "MISSING_CLIENT_CAPABILITY",
        "URL_ELICITATION_REQUIRED",
    }
    assert exported <= set(mcpkit.__all__)


def test_the_protocol_versions_are_the_documented_ones() -> None:
    # docs/api.md: LATEST_PROTOCOL_VERSION is "2026-07-28"; SUPPORTED_PROTOCOL_VERSIONS every revision, newest first
    assert mcpkit.LATEST_PROTOCOL_VERSION == versions.LATEST_PROTOCOL_VERSION == "2026-07-28" == MODERN
    supported = mcpkit.SUPPORTED_PROTOCOL_VERSIONS
    assert supported[0] == "2026-07-28"
    assert LEGACY in supported
    assert list(supported) == sorted(supported, reverse=True)


# --- the constants are what a peer gets -------------------------------------------------------------


async def test_the_codes_are_what_goes_on_the_wire() -> None:
    """The codes a server answers with, as a client sees them, equal the constants (and the
    literals above): a constant that drifted from what mcpkit sends would fail here."""
    server = Server("codes")

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.resource("res://broken")
    def broken() -> str:
        raise OSError("no")

    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        with pytest.raises(McpError) as unknown:
            await client.send_request("no/such/method", {})
        with pytest.raises(McpError) as bad:
            await client.call_tool("nothing-by-this-name")
        with pytest.raises(McpError) as failed:
            await client.read_resource("res://broken")
    assert unknown.value.code == mcpkit.METHOD_NOT_FOUND == -32601
    assert bad.value.code == mcpkit.INVALID_PARAMS == -32602
    assert failed.value.code == mcpkit.INTERNAL_ERROR == -32603


def test_request_timeout_carries_its_constant() -> None:
    assert RequestTimeout(1).code == mcpkit.REQUEST_TIMEOUT == -32001
