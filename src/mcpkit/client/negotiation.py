"""Agreeing on a protocol era and revision with the server: the one place the client
chooses its :class:`~mcpkit.protocol.eras.EraPolicy`.

Unless a revision is pinned, the client probes with ``server/discover`` (modern) and
falls back to ``initialize`` (legacy) on any error that is not a modern server's -32022
naming revisions we share. Silence is not an answer: a server process still starting is
silent too. After ``discover_timeout`` the client sends ``initialize`` as well, keeps the
probe open, and the first answer that decides wins (:func:`negotiate`); a -32022 to
``initialize`` that names a modern revision means the server serves the modern era, which
is adopted. Later, a modern request refused with -32022
adopts a modern revision the refusal offers (:func:`adopt_offered_version`), and the
client retries it once.

Negotiation works on the client's call core through :class:`Negotiating`: it sends its
requests with the core's ``request`` and ``call``, records the agreement with ``agree``,
and reports what the server said about itself to the core's :class:`~.core.Negotiated`
(the public attributes of ``Client``).
"""

from __future__ import annotations

import asyncio
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

__all__ = [
    "Negotiating",
    "negotiate",
    "adopt_offered_version",
    "use_modern",
    "use_discovered",
    "record_discovery",
    "initialize",
    "server_info_from",
]


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

    Unpinned, the client asks ``server/discover`` first. An answer within
    ``discover_timeout`` decides at once (an error that is not a modern -32022 means a
    legacy server: ``initialize`` follows). Past ``discover_timeout`` silence is not taken
    for "legacy" — a process still starting is silent too: ``initialize`` is sent as well,
    the probe stays open, and the first answer that decides wins — the probe's (modern),
    ``initialize``'s (legacy), or a -32022 from either that names a modern revision (the
    server serves the modern era: adopted). Both wait ``request_timeout`` seconds longer.

    ``confirm`` (a reconnection to a server that is not ours to start) makes a pinned
    modern revision, which needs no handshake, still ask ``server/discover``: a server
    still unreachable then fails this attempt rather than the next call (any answer will
    do, an error too).

    Raises :class:`McpError` if the server refuses every revision we speak,
    :class:`ConnectionClosed` if it goes away, :class:`RequestTimeout` if neither
    question is answered in time (its message says what to tune). Cancellation
    propagates (the open requests are withdrawn); the agreement is then whatever was
    adopted last.
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
    probe = asyncio.ensure_future(_discover(core, options.discover_timeout + options.request_timeout))
    try:
        await asyncio.wait({probe}, timeout=options.discover_timeout)
        if probe.done():
            await _after_probe(core, probe)
        else:
            await _race(core, probe)
    finally:
        if not probe.done():
            probe.cancel()  # a legacy server answered initialize: the probe is withdrawn
        await asyncio.gather(probe, return_exceptions=True)


async def _after_probe(core: Negotiating, probe: asyncio.Future[DiscoverResult]) -> None:
    """The probe was answered within ``discover_timeout``: it decides."""
    try:
        found = probe.result()
    except RequestTimeout:
        await initialize(core, LATEST_LEGACY_PROTOCOL_VERSION, fallback=True)
        return
    except ConnectionClosed:
        raise
    except McpError as exc:
        await _after_refusal(core, exc)
        return
    modern = [v for v in MODERN_PROTOCOL_VERSIONS if v in found.supported_versions]
    if modern:
        use_discovered(core, found, modern[0])
        return
    legacy = [v for v in LEGACY_PROTOCOL_VERSIONS if v in found.supported_versions]
    await initialize(core, legacy[0] if legacy else LATEST_LEGACY_PROTOCOL_VERSION, fallback=True)


async def _race(core: Negotiating, probe: asyncio.Future[DiscoverResult]) -> None:
    """The probe is still open after ``discover_timeout``: ``initialize`` goes too, and
    the first decisive answer wins (see :func:`negotiate`). A fallback still open when
    the probe decided is left to end by itself (``initialize`` is never cancelled) and
    its answer ignored."""
    fallback = asyncio.ensure_future(_send_initialize(core, LATEST_LEGACY_PROTOCOL_VERSION))
    fallback.add_done_callback(_ignore_outcome)
    pending: set[asyncio.Future[Any]] = {probe, fallback}
    refusal: McpError | None = None  # initialize's error, raised if nothing decides
    while pending:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        if probe in done:
            exc = probe.exception()
            if exc is None:
                found = probe.result()
                modern = [v for v in MODERN_PROTOCOL_VERSIONS if v in found.supported_versions]
                if modern:
                    use_discovered(core, found, modern[0])
                    return
            elif isinstance(exc, ConnectionClosed):
                raise exc
            elif isinstance(exc, McpError) and (version := _modern_offered(exc)) is not None:
                use_modern(core, version)
                return
            elif not isinstance(exc, McpError):
                raise exc
        if fallback in done:
            exc = fallback.exception()
            if exc is None:
                _finish_initialize(core, fallback.result())
                await _after_initialize(core)
                return
            if isinstance(exc, ConnectionClosed):
                raise exc
            if isinstance(exc, McpError) and (version := _modern_offered(exc)) is not None:
                await _adopt_served_modern(core, probe, version)  # the probe, if it ends, tells more
                return
            if isinstance(exc, McpError) and not isinstance(exc, RequestTimeout):
                refusal = exc
            elif not isinstance(exc, McpError):
                raise exc
    if refusal is not None:
        raise refusal
    raise _unanswered(core)


def _ignore_outcome(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()  # retrieved: an abandoned fallback's failure is not an error


async def _adopt_served_modern(core: Negotiating, probe: asyncio.Future[DiscoverResult], version: str) -> None:
    """``initialize`` was refused with a -32022 naming the modern revision ``version``:
    the server serves the modern era. Adopted, with what the probe says about the server
    if it answers (within its own deadline)."""
    try:
        found = await asyncio.shield(probe)
    except McpError:
        found = None
    if found is not None and version in found.supported_versions:
        use_discovered(core, found, version)
    else:
        use_modern(core, version)


def _unanswered(core: Negotiating) -> RequestTimeout:
    """The timeout of a handshake nobody answered, saying what to tune."""
    options = core.options
    return RequestTimeout(
        None,
        f"The server answered neither server/discover (within {options.discover_timeout + options.request_timeout:g} s) "
        f"nor initialize (within {options.request_timeout:g} s): it may still be starting, or not speak MCP on this "
        "connection. Give it longer with ClientOptions(request_timeout=...) (mcpkit: --timeout), or pin the era "
        "with ClientOptions(protocol_version=...) (mcpkit: --era)",
    )


def _modern_offered(exc: McpError) -> str | None:
    """The modern revision a server's -32022 offers (``data.supported``), if any."""
    if exc.code != UNSUPPORTED_PROTOCOL_VERSION or exc.local or not isinstance(exc.data, dict):
        return None
    offered = exc.data.get("supported")
    if not isinstance(offered, list):
        return None
    return next((v for v in MODERN_PROTOCOL_VERSIONS if v in offered), None)


def use_discovered(core: Negotiating, found: DiscoverResult, version: str) -> None:
    """Modern era at ``version``, with what ``server/discover`` said about the server."""
    use_modern(core, version)
    record_discovery(core.facts, found)


def record_discovery(facts: Negotiated, found: DiscoverResult) -> None:
    """Report what a ``server/discover`` result says about the server: its capabilities,
    instructions and ``serverInfo``."""
    facts.server_capabilities = found.capabilities or {}
    facts.instructions = found.instructions
    facts.server_info = server_info_from(found.meta)


async def _discover(core: CallCore, timeout: float) -> DiscoverResult:
    """``server/discover`` within ``timeout`` (not ``request_timeout``: a slow start must
    not look legacy)."""
    return await core.call("server/discover", None, DiscoverResult, timeout)


async def _confirm(core: CallCore) -> None:
    """Ask ``server/discover`` only to see that the server answers. Raises a local
    :class:`McpError` (:class:`ConnectionClosed`, :class:`RequestTimeout`); the server's
    own errors are an answer too."""
    try:
        await _discover(core, core.options.discover_timeout)
    except McpError as exc:
        if exc.local:
            raise


async def _after_refusal(core: Negotiating, exc: McpError) -> None:
    """The probe got an error: a modern server's -32022 lists what it speaks; anything
    else means a legacy server."""
    if not (exc.code == UNSUPPORTED_PROTOCOL_VERSION and not exc.local and isinstance(exc.data, dict)):
        await initialize(core, LATEST_LEGACY_PROTOCOL_VERSION, fallback=True)
        return
    offered = exc.data.get("supported") or []
    modern = [v for v in MODERN_PROTOCOL_VERSIONS if v in offered]
    if modern:
        use_modern(core, modern[0])
        return
    legacy = [v for v in LEGACY_PROTOCOL_VERSIONS if v in offered]
    if not legacy:
        raise exc
    await initialize(core, legacy[0], fallback=True)


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


async def initialize(core: Negotiating, version: str, *, fallback: bool = False) -> None:
    """Legacy era: the ``initialize`` handshake, then ``notifications/initialized``
    (and ``logging/setLevel`` if a level is configured and the server logs). As the
    ``fallback`` of an unpinned probe, a -32022 that names a modern revision adopts it
    instead (the server serves the modern era); a pinned legacy revision is refused.
    Raises :class:`McpError` for a refusal or a revision we do not speak (local),
    :class:`RequestTimeout`, :class:`ConnectionClosed`."""
    try:
        raw = await _send_initialize(core, version)
    except McpError as exc:
        modern = _modern_offered(exc) if fallback else None
        if modern is None:
            raise
        use_modern(core, modern)
        return
    _finish_initialize(core, raw)
    await _after_initialize(core)


async def _send_initialize(core: Negotiating, version: str) -> msgspec.Raw:
    """Send ``initialize`` (the legacy era adopted for it: no modern ``_meta``) and return
    its raw result. Raises as every request does; nothing else is changed."""
    options = core.options
    core.agree(LEGACY, version, {})
    params = {
        "protocolVersion": version,
        "capabilities": options.capabilities_to_declare(),
        "clientInfo": msgspec.to_builtins(options.client_info),
    }
    return await core.request("initialize", params, options.request_timeout, None)


def _finish_initialize(core: Negotiating, raw: msgspec.Raw) -> None:
    """Adopt what ``initialize`` answered. Raises a local :class:`McpError` for a result
    of the wrong shape or a revision we do not speak."""
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


async def _after_initialize(core: Negotiating) -> None:
    """``notifications/initialized``, then the log level if one is configured and the
    server logs."""
    core.notify("notifications/initialized")
    options = core.options
    if options.log_level is not None and "logging" in core.facts.server_capabilities:
        await core.call("logging/setLevel", {"level": options.log_level}, dict[str, Any], None, rounds=False)
