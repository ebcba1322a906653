"""The OAuth proxy's clients (docs/auth.md, "An OAuth proxy"): dynamic client
registration (RFC 7591) at ``/register``, and authenticating a client at ``/token`` and
``/revoke`` (``none`` for public clients, ``client_secret_basic``, ``client_secret_post``).

A registration is checked before it is kept: redirect URIs must be absolute, of printable
ASCII (percent-encode the rest), without a fragment, and either HTTPS, plain HTTP on a loopback host (RFC 8252 §7.3), or a
private-use scheme of a native application (RFC 8252 §7.1); only the authorization code
and refresh token grants, the ``code`` response type and the three authentication methods
are taken; at most 10 redirect URIs of 4,096 characters together, in a body of 16 KiB at
most. A confidential client's secret is kept as a digest only. A client is kept for
``unused_client_ttl`` (an hour) until its first code is exchanged, then for
``client_ttl``: registrations nobody uses make room again soon.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import secrets
import time
from typing import Any, Final
from urllib.parse import SplitResult, unquote, urlsplit

from .http import BadRequest, ProxyRequest, Response, json_response, oauth_error
from .settings import ProxySettings
from .store import RECORD_ID
from .tokens import digest

__all__ = ["register", "authenticate_client", "ClientRefused", "valid_redirect_uri", "registered_redirect_uri"]

_AUTH_METHODS: Final = ("none", "client_secret_basic", "client_secret_post")
_GRANTS: Final = ("authorization_code", "refresh_token")
_MAX_URIS: Final = 10
#: A registration's bounds: its redirect URIs together, and its whole JSON body.
_MAX_URI_BYTES: Final = 4096
_MAX_METADATA: Final = 16 * 1024
_MAX_TEXT: Final = 200


class ClientRefused(Exception):
    """A client that failed to authenticate: its response (401 ``invalid_client``, or 400
    ``invalid_request``)."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status)
        self.response = response


def _loopback(host: str | None) -> bool:
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def valid_redirect_uri(uri: Any) -> bool:
    """Whether ``uri`` may be a redirect URI (the module docs)."""
    if not isinstance(uri, str) or len(uri) > 2000 or not all("!" <= c <= "~" for c in uri):
        return False  # printable ASCII only: no space or control character, nothing a Location header cannot carry
    try:
        parts = urlsplit(uri)
    except ValueError:
        return False
    if parts.fragment or "#" in uri or not parts.scheme:
        return False
    if parts.scheme == "https":
        return bool(parts.hostname)
    if parts.scheme == "http":
        return _loopback(parts.hostname)
    # a native application's private-use scheme (reverse domain name: com.example.app:/cb)
    return "." in parts.scheme and parts.scheme not in ("javascript", "data", "file") and bool(parts.path)


def _loopback_ip(parts: SplitResult) -> bool:
    return parts.scheme == "http" and parts.hostname in ("127.0.0.1", "::1")


def registered_redirect_uri(uri: str, registered: list[str]) -> str | None:
    """The registered redirect URI that ``uri`` names, or None: the same string, or — for
    a loopback IP literal over HTTP (``127.0.0.1``, ``[::1]``) — the same but for the port,
    which a native application picks when it listens (RFC 8252 §7.3, OAuth 2.1 §8.4.2)."""
    if uri in registered:
        return uri
    try:
        asked = urlsplit(uri)
        if not _loopback_ip(asked) or asked.username is not None or asked.fragment:
            return None
        asked.port  # noqa: B018 - a port that is not a number raises
        for candidate in registered:
            mine = urlsplit(candidate)
            if _loopback_ip(mine) and mine.username is None and (mine.hostname, mine.path, mine.query) == (
                asked.hostname, asked.path, asked.query
            ):  # fmt: skip
                return candidate
    except ValueError:
        return None
    return None


def _text(metadata: dict[str, Any], name: str) -> str | None:
    value = metadata.get(name)
    return value[:_MAX_TEXT] if isinstance(value, str) and value else None


async def register(settings: ProxySettings, request: ProxyRequest) -> Response:
    """Register a client (RFC 7591 §3): 201 with its ``client_id`` (and
    ``client_secret`` unless it chose ``none``) and the metadata kept; 400
    ``invalid_redirect_uri`` or ``invalid_client_metadata`` for what cannot be taken; 503
    ``temporarily_unavailable`` when the store is full."""
    if len(request.body) > _MAX_METADATA:
        return oauth_error("invalid_client_metadata", f"the registration is larger than {_MAX_METADATA} bytes")
    try:
        metadata = request.json()
    except BadRequest as exc:
        return oauth_error("invalid_client_metadata", str(exc))
    if not isinstance(metadata, dict):
        return oauth_error("invalid_client_metadata", "the registration must be a JSON object")
    uris = metadata.get("redirect_uris")
    if not isinstance(uris, list) or not uris or len(uris) > _MAX_URIS:
        return oauth_error("invalid_redirect_uri", f"give between 1 and {_MAX_URIS} redirect_uris")
    if not all(valid_redirect_uri(uri) for uri in uris):
        return oauth_error(
            "invalid_redirect_uri", "each redirect URI must be https, http on a loopback host, or a private-use scheme"
        )
    if sum(len(uri) for uri in uris) > _MAX_URI_BYTES:
        return oauth_error("invalid_redirect_uri", f"the redirect_uris together are longer than {_MAX_URI_BYTES} characters")
    method = metadata.get("token_endpoint_auth_method", "client_secret_basic")
    if method not in _AUTH_METHODS:
        return oauth_error("invalid_client_metadata", f"token_endpoint_auth_method must be one of {', '.join(_AUTH_METHODS)}")
    grants = metadata.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list) or not grants or any(g not in _GRANTS for g in grants):
        return oauth_error("invalid_client_metadata", "grant_types may be authorization_code and refresh_token")
    if "authorization_code" not in grants:
        return oauth_error("invalid_client_metadata", "grant_types must include authorization_code")
    if metadata.get("response_types", ["code"]) != ["code"]:
        return oauth_error("invalid_client_metadata", "response_types must be ['code']")
    client_id = secrets.token_urlsafe(18)
    secret = None if method == "none" else secrets.token_urlsafe(32)
    now = int(time.time())
    record = {
        "client_id": client_id,
        "secret": digest(secret) if secret else None,
        "redirect_uris": list(uris),
        "token_endpoint_auth_method": method,
        "grant_types": list(grants),
        "client_name": _text(metadata, "client_name"),
        "client_uri": _text(metadata, "client_uri"),
        "issued_at": now,
        "active": False,  # until its first code is exchanged: kept unused_client_ttl only
    }
    if not await settings.store.put("client", client_id, record, settings.unused_client_ttl):
        return oauth_error("temporarily_unavailable", "too many registrations; try again later", 503, [("retry-after", "60")])
    answer: dict[str, Any] = {
        "client_id": client_id,
        "client_id_issued_at": now,
        "redirect_uris": record["redirect_uris"],
        "token_endpoint_auth_method": method,
        "grant_types": record["grant_types"],
        "response_types": ["code"],
    }
    if secret is not None:
        answer |= {"client_secret": secret, "client_secret_expires_at": 0}
    answer |= {k: record[k] for k in ("client_name", "client_uri") if record[k]}
    return json_response(201, answer)


def _basic(header: str | None) -> tuple[str, str] | None:
    if not header or not header.lower().startswith("basic "):
        return None
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise ClientRefused(oauth_error("invalid_client", "malformed HTTP Basic credentials", 401)) from None
    client_id, sep, secret = decoded.partition(":")
    if not sep:
        raise ClientRefused(oauth_error("invalid_client", "malformed HTTP Basic credentials", 401))
    return unquote(client_id), unquote(secret)


async def authenticate_client(settings: ProxySettings, request: ProxyRequest, form: dict[str, str]) -> dict[str, Any]:
    """The registered client making this request, authenticated as it registered.
    Raises :class:`ClientRefused`: 401 ``invalid_client`` for an unknown client, a wrong
    or missing secret, or a method it did not register; 400 for two ways at once."""
    basic = _basic(request.headers.get("authorization"))
    if basic is not None and ("client_secret" in form or form.get("client_id", basic[0]) != basic[0]):
        raise ClientRefused(oauth_error("invalid_request", "authenticate the client one way only"))
    client_id, secret, method = (basic[0], basic[1], "client_secret_basic") if basic else (
        form.get("client_id", ""), form.get("client_secret"), "client_secret_post" if "client_secret" in form else "none"
    )  # fmt: skip
    client = await settings.store.get("client", client_id) if RECORD_ID.fullmatch(client_id) else None
    refused = ClientRefused(oauth_error("invalid_client", "client authentication failed", 401,
                                        [("www-authenticate", 'Basic realm="oauth"')]))  # fmt: skip
    if client is None:
        raise refused
    if client["token_endpoint_auth_method"] != method:
        raise refused
    if method != "none" and not (secret and client["secret"] and hmac.compare_digest(digest(secret), client["secret"])):
        raise refused
    return client
