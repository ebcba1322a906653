"""The Streamable HTTP server: one ASGI app serving both eras."""
