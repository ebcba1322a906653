"""Proxies: a server that serves what another server offers (docs/howto/proxies.md).

* :mod:`.proxy` — :class:`~mcpkit.Proxy`, the facade: a ``Server`` with a remote; and
  :func:`proxy_of`, a proxy of several servers (each a Proxy mounted under its name);
* :mod:`.remote` — the upstream server's features as the proxy's registry sees them:
  lists fetched and kept current, requests forwarded, upstream sessions per connection;
* :mod:`.link` — one upstream session: a ``Client`` whose callbacks relay the upstream
  server's questions and messages to the downstream request;
* :mod:`.bridge` — a legacy server's call held between a modern client's input rounds.

Joins the two sides: it builds on :mod:`mcpkit.server` and :mod:`mcpkit.client`, which
never import each other, and nothing below the command line imports it.
"""
