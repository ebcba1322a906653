"""The HTTP stack that server.run('http') builds (docs/http.md, 'The HTTP stack'): uvicorn's
httptools protocol on uvloop when installed, guarded; h11 when asked for."""

from __future__ import annotations

import pytest


def test_http_is_served_on_httptools_and_uvloop_when_installed() -> None:
    """The test extra installs the http extra's stack: run_uvicorn's default is the guard
    over uvicorn's httptools protocol on uvloop (docs/http.md, "The HTTP stack"); h11 is
    still there when asked for, guarded the same way, and a protocol class replaces the guard."""
    from uvicorn.protocols.http.h11_impl import H11Protocol
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from mcpkit import Server
    from mcpkit.transports.http.server.uvicorn import guarded_protocol, uvicorn_config

    app = Server("stack", "1.0.0").asgi_app()
    config = uvicorn_config(app, max_connections=7)
    assert config.loop == "auto"
    loop_factory = config.get_loop_factory()
    assert loop_factory is not None
    loop = loop_factory()
    try:
        assert type(loop).__module__.startswith("uvloop")
    finally:
        loop.close()
    default = config.http
    assert isinstance(default, type)
    assert issubclass(default, HttpToolsProtocol)
    assert default._max_connections == 7  # type: ignore[attr-defined]
    forced = uvicorn_config(app, http="h11", header_timeout=2.0).http
    assert isinstance(forced, type)
    assert issubclass(forced, H11Protocol)
    assert forced._header_timeout == 2.0  # type: ignore[attr-defined]
    assert uvicorn_config(app, http=H11Protocol).http is H11Protocol
    with pytest.raises(ValueError, match="http must be"):
        guarded_protocol(1.0, 1.0, 1, http="zttp")
