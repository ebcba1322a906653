"""Streamable HTTP: the server as an ASGI application (``app.py``, over the layers in
``server/``), the client transport (``transport.py``, over the parts in ``client/``),
and the deprecated HTTP+SSE transport (``sse/``) that both faces offer beside it.

Nothing here is imported by ``import mcpkit`` until used: httpx and uvicorn load lazily.
"""
