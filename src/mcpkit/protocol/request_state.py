"""Sealing the modern era's ``requestState``: what a server hands the client to echo
back on the retry of a multi-round-trip request (docs/interactive.md).

The state is the server's memory of the exchange, carried by the client: the answers
recorded so far, which request it belongs to and when it lapses. It is signed with
HMAC-SHA256 under a key every node of a deployment shares, so any node can continue
the exchange and none has to keep anything; a state that was altered, belongs to
another request or has expired is refused with -32602. It is signed, not encrypted: it
holds only what the client itself answered.

A token has exactly one spelling: both halves are unpadded URL-safe base64 and are decoded
strictly (another alphabet, padding, or stray characters are refused, and so are unused
bits that are not zero), so a server that remembers the states it has seen recognises a
replayed one however it is written. Each exchange — the first round of a request and every
retry that continues it — carries one random *exchange id*, sealed with the answers and
kept from round to round: :attr:`mcpkit.Context.exchange_id`, which a handler records to
make a step single-use (docs/interactive.md, "Replays"). Within its TTL a state can be
presented again; nothing here remembers it.
"""

from __future__ import annotations

import base64
import binascii
import os
import time
from typing import Any, Final

import msgspec

from .errors import INVALID_PARAMS, McpError

__all__ = ["StateSealer", "OpenedState", "request_digest", "new_exchange_id"]

_VERSION: Final = 1
_encode = msgspec.json.Encoder(order="sorted").encode
_decode = msgspec.json.Decoder(dict[str, Any]).decode


def request_digest(method: str, params: dict[str, Any]) -> str:
    """A digest naming one request: its method and its params other than ``_meta``,
    ``inputResponses`` and ``requestState`` (which change from round to round)."""
    import hashlib  # here, not at import time: only multi-round-trip requests need it (about 0.7 MB)

    salient = {k: v for k, v in params.items() if k not in ("_meta", "inputResponses", "requestState")}
    return hashlib.sha256(_encode([method, salient])).hexdigest()[:32]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    """The bytes of unpadded URL-safe base64 ``text``, decoded strictly. Raises
    ``ValueError`` for anything but the one canonical spelling of some bytes: characters
    outside the alphabet, ``=`` padding, a length no encoding has, non-zero unused bits."""
    try:
        data = base64.b64decode(text.encode("ascii") + b"=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (UnicodeEncodeError, binascii.Error):
        raise ValueError("not canonical base64") from None
    if _b64(data) != text:  # "=" inside, or unused bits set: another spelling of these bytes
        raise ValueError("not canonical base64")
    return data


def new_exchange_id() -> str:
    """A fresh random exchange id (128 bits, URL-safe)."""
    return _b64(os.urandom(16))


class OpenedState(msgspec.Struct, frozen=True):
    """What an opened ``requestState`` holds: the recorded ``answers`` and the id of the
    ``exchange`` it continues."""

    answers: dict[str, Any]
    exchange: str


def _refused(why: str) -> McpError:
    return McpError(INVALID_PARAMS, f"Invalid params: requestState {why}")


class StateSealer:
    """Seals and opens ``requestState`` tokens under ``key``; a token lives ``ttl``
    seconds. Raises ``ValueError`` for a key shorter than 16 bytes or a non-positive
    ``ttl``."""

    __slots__ = ("_key", "ttl")

    def __init__(self, key: bytes, ttl: float) -> None:
        if len(key) < 16:
            raise ValueError("the requestState key must be at least 16 bytes")
        if not ttl > 0:
            raise ValueError("the requestState ttl must be positive")
        self._key = key
        self.ttl = ttl

    def _mac(self, body: bytes) -> bytes:
        import hashlib  # see request_digest
        import hmac

        return hmac.new(self._key, body, hashlib.sha256).digest()

    def seal(
        self,
        digest: str,
        answers: dict[str, Any],
        *,
        exchange: str,
        subject: str | None = None,
        now: float | None = None,
    ) -> str:
        """A token for the request named ``digest`` that carries ``answers`` (its
        recorded input responses), the ``exchange`` id and, when given, the authenticated
        ``subject`` (its principal)."""
        payload: dict[str, Any] = {
            "v": _VERSION,
            "d": digest,
            "a": answers,
            "e": exchange,
            "x": int((time.time() if now is None else now) + self.ttl),
        }
        if subject is not None:
            payload["s"] = subject
        body = _encode(payload)
        return _b64(body) + "." + _b64(self._mac(body))

    def open(self, token: Any, digest: str, *, subject: str | None = None, now: float | None = None) -> OpenedState:
        """The answers and the exchange id sealed in ``token``. Raises
        ``McpError(-32602)`` if it is not a token of ours in its one canonical spelling,
        was altered, belongs to another request or subject, or has expired. A valid token
        opens as often as it is presented until it expires."""
        if not isinstance(token, str) or token.count(".") != 1 or len(token) > 1 << 20:
            raise _refused("is malformed")
        body_text, mac_text = token.split(".")
        try:
            body, mac = _unb64(body_text), _unb64(mac_text)
        except (ValueError, TypeError):
            raise _refused("is malformed") from None
        import hmac

        if not hmac.compare_digest(mac, self._mac(body)):
            raise _refused("failed its integrity check (altered, or sealed with another key)")
        payload = _decode(body)
        if payload.get("v") != _VERSION or payload.get("d") != digest:
            raise _refused("belongs to another request")
        if payload.get("s") != subject:
            raise _refused("belongs to another principal")
        expiry = payload.get("x")
        if not isinstance(expiry, int) or (time.time() if now is None else now) > expiry:
            raise _refused("has expired; send the request again without it")
        answers = payload.get("a")
        exchange = payload.get("e")
        if not isinstance(exchange, str):  # sealed before exchange ids: its own MAC names it
            exchange = _b64(mac[:16])
        return OpenedState(answers if isinstance(answers, dict) else {}, exchange)
