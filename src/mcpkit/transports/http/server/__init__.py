"""The Streamable HTTP server's parts: the middleware of the ASGI app and the MCP endpoint
behind them, both eras (``transports/http/app.py`` stacks them)."""
