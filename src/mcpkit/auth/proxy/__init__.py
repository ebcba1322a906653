"""An OAuth proxy: an authorization server facade in front of an identity provider that
lacks what MCP clients need (docs/auth.md, "An OAuth proxy"). Needs the ``auth`` extra;
the Redis store needs the ``redis`` extra too (``mcpkit.auth.proxy.redis``)."""

from __future__ import annotations

from .proxy import OAuthProxy
from .store import InMemoryProxyStore, ProxyStore
from .tokens import ProxyVerifier
from .upstream import UpstreamError, UpstreamIdentity, UpstreamProvider

__all__ = ["OAuthProxy", "ProxyStore", "InMemoryProxyStore", "ProxyVerifier", "UpstreamProvider", "UpstreamIdentity",
           "UpstreamError"]  # fmt: skip
