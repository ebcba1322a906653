"""The verified identity of the request being served (docs/auth.md).

The HTTP app sets it once it has verified the request's bearer token; the handler's
task inherits it (context variables are copied into tasks), and
:attr:`mcpkit.Context.identity` reads it. Unset — None — on transports without
authorization (stdio, memory) and on servers that do not require it.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import msgspec

__all__ = ["AccessToken", "CURRENT"]


class AccessToken(msgspec.Struct, frozen=True):
    """What a verified bearer token says: who (``subject``), through which client
    (``client_id``), allowed what (``scopes``), until when (``expires_at``, seconds since
    the epoch, None if unknown), and every claim. The token itself is never kept.

    Immutable, compared field by field; its repr leaves out the claims and the digest.
    A ``msgspec.Struct`` (``msgspec.structs.replace`` makes a changed copy), not a
    dataclass, whose methods every program importing the server would compile."""

    subject: str | None
    client_id: str | None
    scopes: frozenset[str]
    expires_at: float | None = None
    claims: dict[str, Any] = msgspec.field(default_factory=dict)
    #: A digest of the token (never the token): who this is when it names no one.
    token_digest: str | None = None

    def __repr__(self) -> str:
        return (
            f"AccessToken(subject={self.subject!r}, client_id={self.client_id!r}, scopes={self.scopes!r}, "
            f"expires_at={self.expires_at!r})"
        )

    @property
    def principal(self) -> str | None:
        """Who this token speaks for, as the one key every place that binds something to a
        caller compares (tasks, legacy sessions and their streams, ``requestState``, the
        HTTP+SSE transport's ``/messages``): the token's subject; for a token without one
        (a ``client_credentials`` grant) its client; for a token that names neither, the
        token itself (by digest: a session opened with it is its alone).

        The key is a typed triple — the kind (``"sub"``, ``"client"`` or ``"token"``), the
        issuer (the ``iss`` claim, None when the token carries none) and the name — encoded
        as a JSON array, so that no string an authorization server issues can make two
        different callers one: a user whose ``sub`` is ``"client:svc"`` is not the client
        ``svc``, and the same ``sub`` from two issuers names two principals. An empty
        ``subject`` or ``client_id`` counts as absent. Treat the value as opaque."""
        iss = self.claims.get("iss")
        issuer = iss if isinstance(iss, str) else None
        if self.subject:
            key = ["sub", issuer, self.subject]
        elif self.client_id:
            key = ["client", issuer, self.client_id]
        elif self.token_digest is not None:
            key = ["token", None, self.token_digest]
        else:
            return None
        return msgspec.json.encode(key).decode()

    def has_scopes(self, required: frozenset[str] | set[str] | list[str] | tuple[str, ...]) -> bool:
        """Whether every scope of ``required`` was granted."""
        return set(required) <= self.scopes


#: The identity of the request this task serves (None: not authenticated).
CURRENT: ContextVar[AccessToken | None] = ContextVar("mcpkit_identity", default=None)
