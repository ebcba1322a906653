"""The :class:`~mcpkit.Client` facade's construction: what it takes, and the message
for what it does not (a URL or a command, as FastMCP's client takes them)."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit import Client


@pytest.mark.parametrize("target", ["http://127.0.0.1:8000/mcp", b"server.py", ["python", "server.py"], ("python",)])
def test_a_url_or_a_command_is_refused_saying_which_transport_to_wrap_it_in(target: Any) -> None:
    with pytest.raises(TypeError) as caught:
        Client(target)
    assert str(caught.value) == (
        f"Client takes a transport or a Server, not {type(target).__name__}: "
        "Client(HttpTransport(url)) for a URL, Client(StdioTransport([program, *args])) for a command"
    )
