"""Transports move whole messages and nothing else: stdio (``stdio``, both sides), in
memory, Streamable HTTP (``http``: the server as an ASGI app, the client transport) and
the deprecated HTTP+SSE transport (``http.sse``, both sides). They never import
``server`` or ``client``: the HTTP app talks to the
:class:`~mcpkit.transports.base.RequestHandler` protocol."""
