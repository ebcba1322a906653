"""Agreeing on a protocol era and revision with the server: the one place the client
chooses its :class:`~mcpkit.protocol.eras.EraPolicy`.

Unless a revision is pinned, the client probes with ``server/discover`` (modern) and
falls back to ``initialize`` (legacy) on silence or on any error that is not a modern
server's -32022 naming revisions we share. Later, a modern request refused with -32022
adopts a modern revision the refusal offers (:func:`adopt_offered_version`), and the
client retries it once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ..protocol import meta as meta_keys
from ..protocol.eras import LEGACY, MODERN
from ..protocol.errors import UNSUPPORTED_PROTOCOL_VERSION, ConnectionClosed, McpError, RequestTimeout
from ..protocol.types import Implementation, InitializeResult
from ..protocol.versions import (
    LATEST_LEGACY_PROTOCOL_VERSION,
    LATEST_PROTOCOL_VERSION,
    LEGACY_PROTOCOL_VERSIONS,
    MODERN_PROTOCOL_VERSIONS,
    era_of,
)
from .results import decode_result

if TYPE_CHECKING:
    from .client import Client

__all__ = ["negotiate", "adopt_offered_version"]


async def negotiate(client: Client) -> None:
    """Settle ``client``'s era, revision and what the server told about itself.

    Raises :class:`McpError` if the server refuses every revision we speak,
    :class:`ConnectionClosed` if it goes away, :class:`RequestTimeout` if it does not
    answer ``initialize`` in time.
    """
    options = client.options
    pinned = options.protocol_version
    if pinned is not None:
        if era_of(pinned) == "modern":
            use_modern(client, pinned)
        else:
            await initialize(client, pinned)
        return
    use_modern(client, LATEST_PROTOCOL_VERSION)
    try:
        found = await client.discover(timeout=options.discover_timeout)  # not request_timeout: a slow start must not look legacy
    except ConnectionClosed:
        raise
    except RequestTimeout:
        await initialize(client, LATEST_LEGACY_PROTOCOL_VERSION)
        return
    except McpError as exc:
        await _after_refusal(client, exc)
        return
    modern = [v for v in MODERN_PROTOCOL_VERSIONS if v in found.supported_versions]
    if modern:
        use_modern(client, modern[0])
        client.server_capabilities = found.capabilities
        client.instructions = found.instructions
        client.server_info = server_info_from(found.meta)
        return
    legacy = [v for v in LEGACY_PROTOCOL_VERSIONS if v in found.supported_versions]
    await initialize(client, legacy[0] if legacy else LATEST_LEGACY_PROTOCOL_VERSION)


async def _after_refusal(client: Client, exc: McpError) -> None:
    """The probe got an error: a modern server's -32022 lists what it speaks; anything
    else means a legacy server."""
    if not (exc.code == UNSUPPORTED_PROTOCOL_VERSION and not exc.local and isinstance(exc.data, dict)):
        await initialize(client, LATEST_LEGACY_PROTOCOL_VERSION)
        return
    offered = exc.data.get("supported") or []
    modern = [v for v in MODERN_PROTOCOL_VERSIONS if v in offered]
    if modern:
        use_modern(client, modern[0])
        return
    legacy = [v for v in LEGACY_PROTOCOL_VERSIONS if v in offered]
    if not legacy:
        raise exc
    await initialize(client, legacy[0])


def adopt_offered_version(client: Client, exc: McpError) -> bool:
    """A modern-era request was refused with ``exc``: if it is the server's -32022 and
    its ``data.supported`` names a modern revision we speak, adopt that revision for
    every later request and return True (the caller retries once). False otherwise: the
    error stands (a server that offers only legacy revisions, or none we speak, is not
    switched to mid-session)."""
    if not (client.era == "modern" and exc.code == UNSUPPORTED_PROTOCOL_VERSION and not exc.local):
        return False
    offered = exc.data.get("supported") if isinstance(exc.data, dict) else None
    if not isinstance(offered, list):
        return False
    shared = [v for v in MODERN_PROTOCOL_VERSIONS if v in offered]
    if not shared:
        return False
    version = client.protocol_version if client.protocol_version in shared else shared[0]
    client._agree(MODERN, version, {**client._meta, meta_keys.PROTOCOL_VERSION: version})  # the log level kept
    return True


def use_modern(client: Client, version: str) -> None:
    """Modern era: no handshake; every request will carry this ``_meta``."""
    options = client.options
    meta: dict[str, Any] = {
        meta_keys.PROTOCOL_VERSION: version,
        meta_keys.CLIENT_CAPABILITIES: options.capabilities_to_declare(modern=True),
        meta_keys.CLIENT_INFO: msgspec.to_builtins(options.client_info),
    }
    if options.log_level is not None:
        meta[meta_keys.LOG_LEVEL] = options.log_level
    client._agree(MODERN, version, meta)


def server_info_from(meta: dict[str, Any] | None) -> Implementation | None:
    info = (meta or {}).get(meta_keys.SERVER_INFO)
    if isinstance(info, dict):
        try:
            return msgspec.convert(info, Implementation)
        except msgspec.ValidationError:
            pass
    return None


async def initialize(client: Client, version: str) -> None:
    """Legacy era: the ``initialize`` handshake, then ``notifications/initialized``
    (and ``logging/setLevel`` if a level is configured and the server logs)."""
    options = client.options
    client._agree(LEGACY, version, {})
    params = {
        "protocolVersion": version,
        "capabilities": options.capabilities_to_declare(),
        "clientInfo": msgspec.to_builtins(options.client_info),
    }
    raw = await client._request("initialize", params, options.request_timeout, None)
    result = decode_result(raw, InitializeResult)
    if result.protocol_version not in LEGACY_PROTOCOL_VERSIONS:
        err = McpError(
            UNSUPPORTED_PROTOCOL_VERSION,
            f"Server chose protocol version {result.protocol_version!r}, which this client does not speak",
            {"supported": list(LEGACY_PROTOCOL_VERSIONS), "requested": result.protocol_version},
        )
        err.local = True
        raise err
    client._agree(LEGACY, result.protocol_version, {})
    client.server_info = result.server_info
    client.server_capabilities = result.capabilities
    client.instructions = result.instructions
    client._notify("notifications/initialized")
    if options.log_level is not None and "logging" in result.capabilities:
        await client.send_request("logging/setLevel", {"level": options.log_level})
