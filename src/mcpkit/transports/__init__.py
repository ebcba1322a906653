"""Transports move whole messages and nothing else: stdio (both sides), in memory,
and Streamable HTTP (``http.server`` as an ASGI app, ``http.client``). They never
import ``server`` or ``client``: the HTTP app talks to the
:class:`~mcpkit.transports.base.RequestHandler` protocol."""
