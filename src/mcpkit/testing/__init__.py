"""Helpers for testing an MCP server with mcpkit's client (docs/testing.md).

Plain Python, no test framework: :func:`as_json` turns a result into plain JSON for
``assert as_json(result) == {...}``; :class:`FakeUser` and :class:`FakeModel` answer a
server's elicitation and sampling requests from a script, and record what they were
asked; :func:`free_port` and :func:`http_server` run a server program over HTTP for the
length of a test. The pytest fixtures are in :mod:`mcpkit.testing.pytest_plugin`, the
only module here that imports pytest (``pytest_plugins = ["mcpkit.testing.pytest_plugin"]``).
"""

from __future__ import annotations

from .fakes import FakeModel, FakeUser
from .programs import free_port, http_server
from .snapshot import as_json

__all__ = ["as_json", "FakeUser", "FakeModel", "free_port", "http_server"]
