"""The one exception of the OAuth client: :class:`OAuthError`."""

from __future__ import annotations

from ...protocol.errors import flatten_text

__all__ = ["OAuthError"]

#: How much text from an authorization server an error message quotes at most.
QUOTE_LIMIT = 300


class OAuthError(Exception):
    """The OAuth client could not get a usable access token, and says why.

    ``error`` is the OAuth error code when the authorization server or the callback
    named one (``"invalid_grant"``, ``"access_denied"``, ...), else None; ``status`` is
    the HTTP status of the response that failed, if any. Text that came from a server
    is flattened and bounded before it is quoted, and no token or secret is ever part
    of the message.

    Raised out of an HTTP request that needed authorization: a ``Client`` call over
    ``HttpTransport`` then fails with an ``McpError`` whose message names it.
    """

    def __init__(self, message: str, *, error: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.status = status


def quote(text: object) -> str:
    """Server-provided ``text``, flattened to one bounded line for a message."""
    return flatten_text(str(text), QUOTE_LIMIT)
