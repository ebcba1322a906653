"""The HTTP+SSE client's endpoint event (src/mcpkit/transports/http/sse/stream.py): a
URI relative to the stream's, or absolute on the same origin, default ports included;
anything else is refused."""

from __future__ import annotations

import pytest

from mcpkit.transports.http.sse.stream import resolve_endpoint


@pytest.mark.parametrize(
    ("data", "url"),
    [
        ("/messages?sid=1", "http://h:8/messages?sid=1"),
        ("messages/", "http://h:8/a/messages/"),
        (" http://H:8/m ", "http://H:8/m"),
        ("https://h/m", None),
        ("http://h:9/m", None),
        ("http://other:8/m", None),
        ("//other:8/m", None),
        ("", None),
        ("/m\x00", None),
    ],
)
def test_resolve_endpoint(data: str, url: str | None) -> None:
    if url is None:
        with pytest.raises(ValueError, match="endpoint"):
            resolve_endpoint("http://h:8/a/sse", data)
    else:
        assert resolve_endpoint("http://h:8/a/sse", data) == url


def test_default_ports_are_the_same_origin() -> None:
    assert resolve_endpoint("http://h/sse", "http://h:80/m") == "http://h:80/m"
    assert resolve_endpoint("https://h:443/sse", "https://h/m") == "https://h/m"
