"""Who the client is: credentials registered beforehand, and the metadata it registers
itself with (dynamic registration) or publishes (a Client ID Metadata Document)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

__all__ = ["PreRegisteredClient", "OAuthClientMetadata", "AUTH_METHODS"]

#: The token endpoint authentication methods the client can use.
AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post", "private_key_jwt")


@dataclass(frozen=True, repr=False)
class PreRegisteredClient:
    """Client credentials obtained outside the protocol (from the authorization server's
    console, say), used instead of registering.

    ``client_id`` and, for a confidential client, ``client_secret`` or ``private_key``
    (a PEM private key: the client then authenticates with a ``private_key_jwt``
    assertion signed with ``signing_alg``, inferred from the key when None: ES256/384/512,
    RS256 or EdDSA, and ``key_id`` as its ``kid``). ``auth_method`` forces one of
    ``"none"``, ``"client_secret_basic"``, ``"client_secret_post"``,
    ``"private_key_jwt"``; by default the key, else the secret (HTTP Basic unless the
    server only takes ``client_secret_post``), else ``"none"``.

    Credentials belong to one authorization server: ``issuer`` names it. When it is None
    they are bound to the first authorization server they are used with, and a server
    whose metadata later names another one gets an :class:`OAuthError` rather than these
    credentials. The secret and the key never appear in ``repr``.
    """

    client_id: str
    client_secret: str | None = None
    private_key: str | bytes | None = None
    signing_alg: str | None = None
    key_id: str | None = None
    auth_method: str | None = None
    issuer: str | None = None

    def __post_init__(self) -> None:
        if not self.client_id:
            raise ValueError("client_id must not be empty")
        if self.auth_method is not None and self.auth_method not in AUTH_METHODS:
            raise ValueError(f"auth_method must be one of {', '.join(AUTH_METHODS)}")
        if self.auth_method == "private_key_jwt" and self.private_key is None:
            raise ValueError("private_key_jwt needs a private_key")
        if self.auth_method in ("client_secret_basic", "client_secret_post") and not self.client_secret:
            raise ValueError(f"{self.auth_method} needs a client_secret")

    def __repr__(self) -> str:
        return f"PreRegisteredClient(client_id={self.client_id!r}, auth_method={self.auth_method!r}, issuer={self.issuer!r})"


@dataclass(frozen=True)
class OAuthClientMetadata:
    """What the client says about itself (RFC 7591 client metadata).

    Sent to the registration endpoint when the client registers dynamically, with the
    redirect URI of the redirect handler, ``grant_types`` (``authorization_code`` and
    ``refresh_token``, or ``client_credentials``) and ``application_type`` (``"native"``
    for desktop and CLI programs on a loopback redirect, ``"web"`` for remote web
    apps). ``token_endpoint_auth_method`` is the method asked for (None: ``"none"`` when
    the server takes it, else a client secret). ``extra`` adds other RFC 7591 fields.

    ``metadata_url``: the HTTPS URL (with a path) where you publish this client's Client
    ID Metadata Document. When an authorization server advertises
    ``client_id_metadata_document_supported``, that URL is the ``client_id`` and no
    registration happens; the document must list the redirect URI the handler uses
    (pin ``LoopbackRedirect(port=...)`` for that).
    """

    client_name: str = "mcpkit client"
    client_uri: str | None = None
    logo_uri: str | None = None
    metadata_url: str | None = None
    application_type: Literal["native", "web"] = "native"
    token_endpoint_auth_method: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.metadata_url is not None:
            parts = urlsplit(self.metadata_url)
            if parts.scheme != "https" or not parts.hostname or parts.path in ("", "/"):
                raise ValueError("metadata_url must be an https URL with a path, e.g. https://app.example.com/client.json")
        if self.token_endpoint_auth_method is not None and self.token_endpoint_auth_method not in AUTH_METHODS[:3]:
            raise ValueError("token_endpoint_auth_method must be none, client_secret_basic or client_secret_post")

    def registration_body(self, redirect_uri: str | None, grant_types: list[str], auth_method: str) -> dict[str, Any]:
        """The RFC 7591 registration request for these metadata."""
        body: dict[str, Any] = {
            **self.extra,
            "client_name": self.client_name,
            "grant_types": grant_types,
            "token_endpoint_auth_method": auth_method,
            "application_type": self.application_type,
        }
        if redirect_uri is not None:
            body["redirect_uris"] = [redirect_uri]
            body["response_types"] = ["code"]
        for name in ("client_uri", "logo_uri"):
            value = getattr(self, name)
            if value is not None:
                body[name] = value
        return body
