"""The verified identity of the request being served (docs/auth.md).

The HTTP app sets it once it has verified the request's bearer token; the handler's
task inherits it (context variables are copied into tasks), and
:attr:`mcpkit.Context.identity` reads it. Unset — None — on transports without
authorization (stdio, memory) and on servers that do not require it.
"""

from __future__ import annotations

import dataclasses
from contextvars import ContextVar
from typing import Any

__all__ = ["AccessToken", "CURRENT"]


@dataclasses.dataclass(frozen=True)
class AccessToken:
    """What a verified bearer token says: who (``subject``), through which client
    (``client_id``), allowed what (``scopes``), until when (``expires_at``, seconds since
    the epoch, None if unknown), and every claim. The token itself is never kept."""

    subject: str | None
    client_id: str | None
    scopes: frozenset[str]
    expires_at: float | None = None
    claims: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)
    #: A digest of the token (never the token): who this is when it names no one.
    token_digest: str | None = dataclasses.field(default=None, repr=False)

    @property
    def principal(self) -> str | None:
        """Who this token speaks for: its subject; for a token without one (a
        ``client_credentials`` grant) its client; for a token that names neither, the
        token itself (by digest: a session opened with it is its alone)."""
        if self.subject is not None:
            return self.subject
        if self.client_id is not None:
            return f"client:{self.client_id}"
        return f"token:{self.token_digest}" if self.token_digest is not None else None

    def has_scopes(self, required: frozenset[str] | set[str] | list[str] | tuple[str, ...]) -> bool:
        """Whether every scope of ``required`` was granted."""
        return set(required) <= self.scopes


#: The identity of the request this task serves (None: not authenticated).
CURRENT: ContextVar[AccessToken | None] = ContextVar("mcpkit_identity", default=None)
