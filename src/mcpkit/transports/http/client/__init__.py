"""The parts of the Streamable HTTP client transport (``transports/http/transport.py``
composes them; the HTTP+SSE client reuses some)."""
