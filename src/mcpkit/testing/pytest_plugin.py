"""pytest fixtures for testing an mcpkit server (docs/testing.md). The one module of
mcpkit that imports pytest; load it from a ``conftest.py``::

    pytest_plugins = ["mcpkit.testing.pytest_plugin"]

Define a ``mcp_server`` fixture that returns the server under test; ``mcp_client`` is
then a :class:`~mcpkit.Client` connected to it in memory for one test, with the
``ClientOptions`` that ``mcp_client_options`` returns (override it to answer
elicitation or sampling, pin a protocol version, ...). The async fixture needs
pytest-asyncio (``pip install pytest-asyncio``; ``asyncio_mode = "auto"`` spares the
``@pytest.mark.asyncio`` on each test).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

try:
    import pytest_asyncio
except ImportError as exc:
    raise ImportError("mcpkit.testing.pytest_plugin needs pytest-asyncio: pip install pytest-asyncio") from exc

from ..client.client import Client
from ..client.options import ClientOptions

__all__ = ["mcp_server", "mcp_client_options", "mcp_client"]


@pytest.fixture
def mcp_server() -> Any:
    """The server under test: define a fixture of this name (in a ``conftest.py`` or the
    test module) that returns it. This default fails the test and says so."""
    pytest.fail("define a `mcp_server` fixture that returns the Server under test (mcpkit.testing.pytest_plugin)")


@pytest.fixture
def mcp_client_options() -> ClientOptions | None:
    """The ``ClientOptions`` of ``mcp_client``: None (the defaults) unless overridden."""
    return None


@pytest_asyncio.fixture
async def mcp_client(mcp_server: Any, mcp_client_options: ClientOptions | None) -> AsyncIterator[Client]:
    """A client connected in memory to ``mcp_server`` for the length of one test, closed
    after it. The same JSON messages pass as over stdio. Fails the test with what the
    connection raised (``McpError``, ``RequestTimeout``, ...) if it cannot connect."""
    async with Client(mcp_server, mcp_client_options) as client:
        yield client
