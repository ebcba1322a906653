"""The deprecated HTTP+SSE transport of 2024-11-05, both sides, in a package of its own.

One ``GET`` stream carries every message from the server, after an ``endpoint`` event
naming where the client POSTs its messages (each answered 202). The client side is
:mod:`.client` (``SseTransport``) with its GET stream, :mod:`.stream`, and
:mod:`.fallback`, the switch ``HttpTransport`` makes to it when a server speaks only
this transport. It is built from the Streamable HTTP pieces (``transports/http/client/``,
``transports/http/server/``), which never import it; the two faces that offer it —
``transports/http/transport.py`` and the ASGI app — sit above both.
"""
