"""Streamable HTTP: the server as an ASGI application, and the client transport.

Nothing here is imported by ``import mcpkit`` until used: httpx and uvicorn load lazily.
"""
