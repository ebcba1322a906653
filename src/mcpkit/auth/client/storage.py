"""Where the client keeps its tokens and registrations: :class:`TokenStorage`.

A storage holds JSON objects under string keys, so a persistent one is a few lines over
a file, a keyring or a database. The flow keeps two kinds of records:

* ``"tokens <resource>"``: the tokens for one MCP server (:class:`Tokens`), with the
  issuer that granted them, so tokens from a previous authorization server are dropped;
* ``"client <issuer>"``: the registration obtained from one authorization server
  (:class:`RegisteredClient`), never used with another (the spec's authorization
  server binding).

Records hold secrets (tokens, client secrets): keep a persistent store private to the
user. A record that cannot be read back is treated as absent.
"""

from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Protocol, runtime_checkable

__all__ = ["TokenStorage", "InMemoryTokenStorage", "Tokens", "RegisteredClient", "tokens_key", "client_key"]

#: Seconds before its expiry at which an access token is treated as expired.
EXPIRY_MARGIN = 30.0


@runtime_checkable
class TokenStorage(Protocol):
    """Keeps the OAuth client's records: JSON objects (dicts of JSON values) under
    string keys. Both methods are coroutines; a record that is absent loads as None,
    and saving None deletes it."""

    async def load(self, key: str) -> dict[str, Any] | None:
        """The record saved under ``key``, or None."""
        ...

    async def save(self, key: str, value: dict[str, Any] | None) -> None:
        """Save ``value`` under ``key`` (delete the record when ``value`` is None)."""
        ...


class InMemoryTokenStorage:
    """The default :class:`TokenStorage`: records in a dict, gone with the process.
    Copies go in and out, so a caller cannot change a stored record by accident."""

    def __init__(self) -> None:
        self._records: dict[str, dict[str, Any]] = {}

    async def load(self, key: str) -> dict[str, Any] | None:
        """The record saved under ``key``, or None."""
        record = self._records.get(key)
        return copy.deepcopy(record) if record is not None else None

    async def save(self, key: str, value: dict[str, Any] | None) -> None:
        """Save ``value`` under ``key`` (delete the record when ``value`` is None)."""
        if value is None:
            self._records.pop(key, None)
        else:
            self._records[key] = copy.deepcopy(value)


def tokens_key(resource: str) -> str:
    """The storage key of the tokens for ``resource``."""
    return f"tokens {resource}"


def client_key(issuer: str) -> str:
    """The storage key of the registration with ``issuer``."""
    return f"client {issuer}"


def _from_record(cls: Any, record: dict[str, Any] | None, required: tuple[str, ...]) -> Any:
    if not isinstance(record, dict) or any(not isinstance(record.get(name), str) for name in required):
        return None
    names = {f.name for f in fields(cls) if f.init}
    try:
        return cls(**{k: v for k, v in record.items() if k in names})
    except (TypeError, ValueError):
        return None


@dataclass
class Tokens:
    """The tokens for one resource: ``access_token``, ``refresh_token`` (may be None),
    ``expires_at`` (epoch seconds, None when the server gave no lifetime), the granted
    ``scope`` and the ``requested_scope``, the ``issuer`` that granted them, whether that
    server had no metadata (``legacy``), the ``resource`` they were issued for, and the
    ``token_type``: ``"Bearer"``, or ``"DPoP"`` for a token bound to this process's key."""

    access_token: str
    issuer: str
    refresh_token: str | None = None
    expires_at: float | None = None
    scope: str | None = None
    requested_scope: str | None = None
    legacy: bool = False
    resource: str | None = None
    token_type: str = "Bearer"

    def expired(self, now: float | None = None) -> bool:
        """Whether the access token is expired, or about to (:data:`EXPIRY_MARGIN`)."""
        if self.expires_at is None:
            return False
        return (time.time() if now is None else now) >= self.expires_at - EXPIRY_MARGIN

    def record(self) -> dict[str, Any]:
        """The JSON record of these tokens."""
        return asdict(self)

    @classmethod
    def from_record(cls, record: dict[str, Any] | None) -> Tokens | None:
        """Tokens from a stored record; None if it is absent or unreadable."""
        return _from_record(cls, record, ("access_token", "issuer"))  # type: ignore[no-any-return]


@dataclass
class RegisteredClient:
    """A client identity at one authorization server (``issuer``): its ``client_id``,
    ``client_secret`` (and when it expires, epoch seconds, 0 for never), the token
    endpoint ``auth_method``, the ``redirect_uris`` it was registered with, and how it
    was obtained (``source``: ``"registered"``, ``"metadata-document"`` or
    ``"pre-registered"``). A pre-registered client's key (``private_key``,
    ``signing_alg``, ``key_id``) is never stored."""

    client_id: str
    issuer: str
    auth_method: str = "none"
    client_secret: str | None = None
    secret_expires_at: float = 0
    redirect_uris: list[str] = field(default_factory=list)
    source: str = "registered"
    private_key: str | bytes | None = field(default=None, repr=False, compare=False)
    signing_alg: str | None = field(default=None, compare=False)
    key_id: str | None = field(default=None, compare=False)

    def usable(self, redirect_uri: str | None, now: float | None = None) -> bool:
        """Whether this registration still serves: its secret has not expired, and it
        was registered with ``redirect_uri`` (when there is one)."""
        if self.secret_expires_at and (time.time() if now is None else now) >= self.secret_expires_at:
            return False
        return redirect_uri is None or redirect_uri in self.redirect_uris

    def record(self) -> dict[str, Any]:
        """The JSON record of this registration (without any key)."""
        record = asdict(self)
        for name in ("private_key", "signing_alg", "key_id"):
            record.pop(name)
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any] | None) -> RegisteredClient | None:
        """A registration from a stored record; None if it is absent or unreadable."""
        if isinstance(record, dict):
            record = {k: v for k, v in record.items() if k not in ("private_key", "signing_alg", "key_id")}
        return _from_record(cls, record, ("client_id", "issuer"))  # type: ignore[no-any-return]
