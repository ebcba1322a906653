"""Agreeing on a protocol era and revision with the server: the one place the client
chooses its :class:`~mcpkit.protocol.eras.EraPolicy`.

Unless a revision is pinned, the client probes with ``server/discover`` (modern) and
falls back to ``initialize`` (legacy) on silence or on any error that is not a modern
server's -32022 naming revisions we share. Later, a modern request refused with -32022
adopts a modern revision the refusal offers (:func:`adopt_offered_version`), and the
client retries it once.

Negotiation works on the client's call core through :class:`Negotiating`: it sends its
requests with the core's ``request`` and ``call``, records the agreement with ``agree``,
and reports what the server said about itself to the core's :class:`~.core.Negotiated`
(the public attributes of ``Client``).
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from ..protocol import meta as meta_keys
from ..protocol.eras import LEGACY, MODERN, EraPolicy
from ..protocol.errors import UNSUPPORTED_PROTOCOL_VERSION, ConnectionClosed, McpError, RequestTimeout
from ..protocol.types import DiscoverResult, Implementation, InitializeResult
from ..protocol.versions import (
    LATEST_LEGACY_PROTOCOL_VERSION,
    LATEST_PROTOCOL_VERSION,
    LEGACY_PROTOCOL_VERSIONS,
    MODERN_PROTOCOL_VERSIONS,
)
from .core import CallCore, Negotiated
from .results import decode_result

__all__ = ["Negotiating", "negotiate", "adopt_offered_version", "use_modern", "initialize", "server_info_from"]


class Negotiating(CallCore, Protocol):
    """What negotiation needs of the client's call core beyond requests."""

    @property
    def facts(self) -> Negotiated:
        """Where the agreement and the server's own account are reported."""
        ...

    def agree(self, policy: EraPolicy, version: str, meta: dict[str, Any]) -> None:
        """Adopt ``policy``'s era at ``version``; ``meta`` is what every request will carry."""
        ...

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification as it is (dropped if the connection is gone)."""
        ...


async def negotiate(core: Negotiating, *, confirm: bool = False) -> None:
    """Settle the era, the revision and what the server told about itself.

    ``confirm`` (a reconnection to a server that is not ours to start) makes a pinned
    modern revision, which needs no handshake, still ask ``server/discover``: a server
    still unreachable then fails this attempt rather than the next call (any answer will
    do, an error too).

    Raises :class:`McpError` if the server refuses every revision we speak,
    :class:`ConnectionClosed` if it goes away, :class:`RequestTimeout` if it does not
    answer ``initialize`` (or, confirming, ``server/discover``) in time. Cancellation
    propagates; the agreement is then whatever was adopted last.
    """
    options = core.options
    pinned = options.protocol_version
    if pinned is not None:
        if pinned in MODERN.versions:
            use_modern(core, pinned)
            if confirm:
                await _confirm(core)
        else:
            await initialize(core, pinned)
        return
    use_modern(core, LATEST_PROTOCOL_VERSION)
    try:
        found = await _discover(core)
    except ConnectionClosed:
        raise
    except RequestTimeout:
        await initialize(core, LATEST_LEGACY_PROTOCOL_VERSION)
        return
    except McpError as exc:
        await _after_refusal(core, exc)
        return
    modern = [v for v in MODERN_PROTOCOL_VERSIONS if v in found.supported_versions]
    if modern:
        use_modern(core, modern[0])
        facts = core.facts
        facts.server_capabilities = found.capabilities
        facts.instructions = found.instructions
        facts.server_info = server_info_from(found.meta)
        return
    legacy = [v for v in LEGACY_PROTOCOL_VERSIONS if v in found.supported_versions]
    await initialize(core, legacy[0] if legacy else LATEST_LEGACY_PROTOCOL_VERSION)


async def _discover(core: CallCore) -> DiscoverResult:
    """``server/discover`` within ``discover_timeout`` (not ``request_timeout``: a slow
    start must not look legacy)."""
    return await core.call("server/discover", None, DiscoverResult, core.options.discover_timeout)


async def _confirm(core: CallCore) -> None:
    """Ask ``server/discover`` only to see that the server answers. Raises a local
    :class:`McpError` (:class:`ConnectionClosed`, :class:`RequestTimeout`); the server's
    own errors are an answer too."""
    try:
        await _discover(core)
    except McpError as exc:
        if exc.local:
            raise


async def _after_refusal(core: Negotiating, exc: McpError) -> None:
    """The probe got an error: a modern server's -32022 lists what it speaks; anything
    else means a legacy server."""
    if not (exc.code == UNSUPPORTED_PROTOCOL_VERSION and not exc.local and isinstance(exc.data, dict)):
        await initialize(core, LATEST_LEGACY_PROTOCOL_VERSION)
        return
    offered = exc.data.get("supported") or []
    modern = [v for v in MODERN_PROTOCOL_VERSIONS if v in offered]
    if modern:
        use_modern(core, modern[0])
        return
    legacy = [v for v in LEGACY_PROTOCOL_VERSIONS if v in offered]
    if not legacy:
        raise exc
    await initialize(core, legacy[0])


def adopt_offered_version(core: Negotiating, exc: McpError) -> bool:
    """A modern-era request was refused with ``exc``: if it is the server's -32022 and
    its ``data.supported`` names a modern revision we speak, adopt that revision for
    every later request and return True (the caller retries once). False otherwise: the
    error stands (a server that offers only legacy revisions, or none we speak, is not
    switched to mid-session)."""
    if not (core.policy.stateless and exc.code == UNSUPPORTED_PROTOCOL_VERSION and not exc.local):
        return False  # only a request that carries its revision is refused per request
    offered = exc.data.get("supported") if isinstance(exc.data, dict) else None
    if not isinstance(offered, list):
        return False
    shared = [v for v in MODERN_PROTOCOL_VERSIONS if v in offered]
    if not shared:
        return False
    current = core.facts.protocol_version
    version = current if current in shared else shared[0]
    core.agree(MODERN, version, {**core.meta, meta_keys.PROTOCOL_VERSION: version})  # the log level kept
    return True


def use_modern(core: Negotiating, version: str) -> None:
    """Modern era: no handshake; every request will carry this ``_meta``."""
    options = core.options
    meta: dict[str, Any] = {
        meta_keys.PROTOCOL_VERSION: version,
        meta_keys.CLIENT_CAPABILITIES: options.capabilities_to_declare(modern=True),
        meta_keys.CLIENT_INFO: msgspec.to_builtins(options.client_info),
    }
    if options.log_level is not None:
        meta[meta_keys.LOG_LEVEL] = options.log_level
    core.agree(MODERN, version, meta)


def server_info_from(meta: dict[str, Any] | None) -> Implementation | None:
    """The server's ``serverInfo`` in a result's ``_meta`` (None if absent or malformed)."""
    info = (meta or {}).get(meta_keys.SERVER_INFO)
    if isinstance(info, dict):
        try:
            return msgspec.convert(info, Implementation)
        except msgspec.ValidationError:
            pass
    return None


async def initialize(core: Negotiating, version: str) -> None:
    """Legacy era: the ``initialize`` handshake, then ``notifications/initialized``
    (and ``logging/setLevel`` if a level is configured and the server logs). Raises
    :class:`McpError` for a refusal or a revision we do not speak (local),
    :class:`RequestTimeout`, :class:`ConnectionClosed`."""
    options = core.options
    core.agree(LEGACY, version, {})
    params = {
        "protocolVersion": version,
        "capabilities": options.capabilities_to_declare(),
        "clientInfo": msgspec.to_builtins(options.client_info),
    }
    raw = await core.request("initialize", params, options.request_timeout, None)
    result = decode_result(raw, InitializeResult)
    if result.protocol_version not in LEGACY_PROTOCOL_VERSIONS:
        raise McpError(
            UNSUPPORTED_PROTOCOL_VERSION,
            f"Server chose protocol version {result.protocol_version!r}, which this client does not speak",
            {"supported": list(LEGACY_PROTOCOL_VERSIONS), "requested": result.protocol_version},
            local=True,
        )
    core.agree(LEGACY, result.protocol_version, {})
    facts = core.facts
    facts.server_info = result.server_info
    facts.server_capabilities = result.capabilities
    facts.instructions = result.instructions
    core.notify("notifications/initialized")
    if options.log_level is not None and "logging" in result.capabilities:
        await core.call("logging/setLevel", {"level": options.log_level}, dict[str, Any], None, rounds=False)
