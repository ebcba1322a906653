"""Running the protocol on asyncio: the :class:`~mcpkit.runtime.peer.Peer` that drives
the engine over a transport, worker threads for plain ``def`` handlers, and the
outbound channel a handler talks back through. Never imports ``server``, ``client``
or ``transports``."""
