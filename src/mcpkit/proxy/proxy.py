"""The :class:`Proxy` facade: a :class:`~mcpkit.Server` that also serves what another
server offers, reached by a :class:`~mcpkit.Client` (docs/howto/proxies.md); and
:func:`proxy_of`, several of them mounted in one server.

A proxy is an ordinary server — served over any transport, with its own tools,
middleware, mounts and options — whose registry has a *remote* (:mod:`.remote`): the
upstream server's features are listed after its own (and its mounts') and every request for a name it
does not have is forwarded on an upstream session (:mod:`.link`). It connects upstream
in its lifespan: before serving its first client, it connects and lists, and it
disconnects after the last.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from ..client.options import ClientOptions
from ..server.filters import Selection
from ..server.lifespan import Lifespan
from ..server.server import Server
from ..transports.base import Servable, Transport
from .link import Connect
from .remote import RemoteFeatures

__all__ = ["Proxy", "proxy_of"]


class Proxy(Server):
    """A server whose tools, prompts, resources and templates are also those of the
    server behind it (docs/howto/proxies.md).

    ``upstream`` is a function returning a fresh transport (``lambda:
    StdioTransport([...])``, ``lambda: HttpTransport(url)``) or a ``Server`` — each
    legacy downstream connection then gets an upstream session of its own — or one
    transport, which every client shares. ``client_options`` are the upstream client's
    (its timeouts, retries, era; default: a 300 s deadline restarted by progress); the
    callbacks that answer the upstream server's questions are the proxy's own. At most
    ``max_sessions`` upstream sessions are open besides the shared one (100); lists are
    fetched whole, at most ``max_pages`` pages each (100). A legacy upstream server's
    call that asks a 2026-07-28 client is held between the client's rounds for at most
    ``round_ttl`` seconds each (300), then cancelled. The upstream credentials are the
    proxy's: the transport's, never a downstream client's bearer token.

    ``include``, ``exclude``, ``include_tags`` and ``exclude_tags`` select which of the
    upstream server's features are offered, by their upstream names (a tool's or prompt's
    name, a resource's URI, a template's URI template) or by their tags
    (:mod:`mcpkit.server.filters`); the others are neither listed nor forwarded.

    The other arguments are :class:`~mcpkit.Server`'s; a ``lifespan`` runs inside the
    upstream connection. Raises ``ValueError`` for bounds that are not positive,
    ``TypeError`` for a selection given as one string.
    """

    def __init__(
        self,
        upstream: Connect | Transport | Servable,
        name: str = "proxy",
        version: str = "0.1.0",
        *,
        client_options: ClientOptions | None = None,
        max_sessions: int = 100,
        max_pages: int = 100,
        round_ttl: float = 300.0,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] = (),
        include_tags: Iterable[str] | None = None,
        exclude_tags: Iterable[str] = (),
        lifespan: Lifespan | None = None,
        **server_options: Any,
    ) -> None:
        if max_sessions < 1 or max_pages < 1 or not round_ttl > 0:
            raise ValueError("max_sessions, max_pages and round_ttl must be positive")
        selection = Selection(include=include, exclude=exclude, include_tags=include_tags, exclude_tags=exclude_tags)
        fixed = upstream
        per_session = callable(upstream) or isinstance(upstream, Server)  # a Server: a connection in memory each time
        connect: Connect = upstream if callable(upstream) and not isinstance(upstream, Server) else lambda: fixed  # type: ignore[assignment,return-value]
        options = client_options or ClientOptions(request_timeout=300.0, reset_timeout_on_progress=True)
        self._user_lifespan = lifespan

        def connected(server: Server) -> contextlib.AbstractAsyncContextManager[Any]:
            return self._connected(server)

        if lifespan is not None:  # handlers may ask for its state by type, as on any Server
            connected.__wrapped__ = lifespan  # type: ignore[attr-defined]
        super().__init__(name, version, lifespan=connected, **server_options)
        self._remote = RemoteFeatures(
            connect,
            options,
            self._registry,
            per_session=per_session,
            max_sessions=max_sessions,
            max_pages=max_pages,
            round_ttl=round_ttl,
            selection=selection,
        )
        self._registry.remote = self._remote

    @contextlib.asynccontextmanager
    async def _connected(self, server: Server) -> AsyncIterator[Any]:
        """The proxy's lifespan: connected upstream, then the user's lifespan inside."""
        await self._remote.start()
        try:
            if self._user_lifespan is None:
                yield None
            else:
                async with self._user_lifespan(server) as state:
                    yield state
        finally:
            await self._remote.stop()


def proxy_of(
    upstreams: Mapping[str, Connect | Transport | Servable],
    name: str = "proxy",
    version: str = "0.1.0",
    *,
    separator: str = "_",
    client_options: ClientOptions | None = None,
    **server_options: Any,
) -> Server:
    """A server offering what several servers offer: each of ``upstreams`` (a name, and
    what :class:`Proxy` takes as its ``upstream``) behind a :class:`Proxy` mounted under
    its name as the prefix (``github_search`` for the tool ``search`` of ``github``,
    ``notes://github/...`` for its URIs; docs/howto/compose.md). ``client_options`` are
    every proxy's upstream client's; ``server_options`` are the serving server's (its
    paging, state key, time limits). The proxies connect when it starts serving, and one
    that cannot connect stops it from starting.

    Raises ``ValueError`` for no upstreams, or a name that is not a valid mount prefix
    (letters, digits, ``_``, ``-``, ``.``)."""
    if not upstreams:
        raise ValueError("proxy_of() needs at least one upstream server")
    server = Server(name, version, **server_options)
    for prefix, upstream in upstreams.items():
        server.mount(Proxy(upstream, prefix, client_options=client_options), prefix, separator=separator)
    return server
