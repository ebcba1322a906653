"""Enterprise-managed authorization (the ext-auth extension, docs/auth.md): the user's
identity assertion from single sign-on traded at the enterprise identity provider for an
ID-JAG, by RFC 8693 token exchange — :class:`IdJagExchange`.

The ID-JAG (an Identity Assertion JWT Authorization Grant) names the MCP server's
authorization server (``audience``, its issuer) and the MCP server (``resource``); the
client presents it there with the RFC 7523 ``jwt_bearer`` grant, which
:class:`~.flow.OAuthClientAuth` does when given an ``IdJagExchange`` as its
``assertion``. The identity provider's policy decides whether this user may use this
client with that server: a refusal is an :class:`~.errors.OAuthError` with the provider's
error code, and it is final (the flow does not fall back to another grant).

The provider is the application's choice, configured, not named by an MCP server: its
URLs pass no target policy, but they must be HTTPS (loopback aside, or ``allow_http``).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Final

import httpx

from .client_auth import authenticate
from .discovery import ServerMetadata, discover_server
from .errors import OAuthError, quote
from .fetch import Fetcher
from .registration import pre_registered
from .settings import PreRegisteredClient
from .urls import check_transport

__all__ = ["IdJagExchange", "TOKEN_EXCHANGE", "ID_JAG", "SUBJECT_TOKEN_TYPES"]

#: The RFC 8693 grant type.
TOKEN_EXCHANGE: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
#: The token type of an ID-JAG (draft-ietf-oauth-identity-assertion-authz-grant).
ID_JAG: Final = "urn:ietf:params:oauth:token-type:id-jag"
#: What the subject token may be, by its short name: an OpenID Connect ID token, a
#: refresh token of the provider (after a SAML exchange, say), or a SAML 2.0 assertion.
SUBJECT_TOKEN_TYPES: Final = {
    "id_token": "urn:ietf:params:oauth:token-type:id_token",
    "refresh_token": "urn:ietf:params:oauth:token-type:refresh_token",
    "saml2": "urn:ietf:params:oauth:token-type:saml2",
}

#: The user's identity assertion, or how to get the current one (sync or async).
SubjectToken = str | Callable[[], str | Awaitable[str]]


class IdJagExchange:
    """An ``assertion`` for ``OAuthClientAuth(assertion=...)``: called with the MCP
    authorization server's issuer and the MCP server's resource, it asks the identity
    provider for an ID-JAG and returns it.

    ``client`` is this application's registration at the identity provider (the one it
    signs users in with; a secret or a private key when the provider wants the client
    authenticated, as for single sign-on). ``subject_token`` is the user's assertion
    from that sign-on, or a function returning the current one (called for each
    exchange, so a renewed ID token is used); ``subject_token_type`` says which kind it
    is (:data:`SUBJECT_TOKEN_TYPES`). The provider's token endpoint is
    ``token_endpoint``, or found from its ``issuer``'s metadata (RFC 8414, then OpenID
    discovery). ``scope`` is asked for in the exchange (the authorization server grants
    at most those). ``send_resource=False`` leaves the optional ``resource`` out.
    ``timeout`` bounds each request; ``http_client`` is an ``httpx.AsyncClient`` to send
    them with (not closed here; by default one per exchange).

    Raises ``ValueError`` for settings that cannot work. A call raises
    :class:`~.errors.OAuthError` when the provider cannot be reached, refuses (its
    ``error`` code kept), or answers with anything but an ID-JAG. Cancelled, it closes
    the request in flight and asks nothing more.
    """

    def __init__(
        self,
        *,
        client: PreRegisteredClient,
        subject_token: SubjectToken,
        subject_token_type: str = "id_token",
        token_endpoint: str | None = None,
        issuer: str | None = None,
        scope: str | None = None,
        send_resource: bool = True,
        timeout: float = 10.0,
        http_client: httpx.AsyncClient | None = None,
        allow_http: bool = False,
    ) -> None:
        if (token_endpoint is None) == (issuer is None):
            raise ValueError("give the identity provider's token_endpoint or its issuer (one of them)")
        if subject_token_type not in SUBJECT_TOKEN_TYPES:
            raise ValueError(f"subject_token_type must be one of {', '.join(SUBJECT_TOKEN_TYPES)}")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        if isinstance(subject_token, str) and not subject_token:
            raise ValueError("subject_token must not be empty")
        self.client = client
        self.subject_token = subject_token
        self.subject_token_type = subject_token_type
        self.scope = scope
        self.send_resource = send_resource
        self.timeout = timeout
        self.allow_http = allow_http
        self._issuer = issuer
        self._http_client = http_client
        self._meta: ServerMetadata | None = None
        if token_endpoint is not None:
            try:
                endpoint = check_transport(token_endpoint, "identity provider's token endpoint", allow_http=allow_http)
            except OAuthError as exc:
                raise ValueError(str(exc)) from None
            self._meta = ServerMetadata(issuer=client.issuer or endpoint, token_endpoint=endpoint)

    def __repr__(self) -> str:  # never the subject token
        return f"IdJagExchange(client={self.client!r}, issuer={self._issuer!r}, scope={self.scope!r})"

    async def __call__(self, issuer: str, resource: str) -> str:
        """An ID-JAG for the authorization server ``issuer`` and the MCP server
        ``resource``. Raises :class:`~.errors.OAuthError` (see the class)."""
        if self._http_client is not None:
            return await self._exchange(Fetcher(self._http_client, self.timeout), issuer, resource)
        async with httpx.AsyncClient() as http:
            return await self._exchange(Fetcher(http, self.timeout), issuer, resource)

    async def _exchange(self, fetch: Fetcher, audience: str, resource: str) -> str:
        if self._meta is None:
            assert self._issuer is not None
            self._meta = await discover_server(fetch, self._issuer, legacy=False, allow_http=self.allow_http)
        meta = self._meta
        made = self.subject_token() if callable(self.subject_token) else self.subject_token
        subject = await made if inspect.isawaitable(made) else made
        if not isinstance(subject, str) or not subject:
            raise OAuthError("the subject token for the token exchange is empty")
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "audience": audience,
            "subject_token": subject,
            "subject_token_type": SUBJECT_TOKEN_TYPES[self.subject_token_type],
        }
        if self.send_resource:
            form["resource"] = resource
        if self.scope:
            form["scope"] = self.scope
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        authenticate(pre_registered(self.client, meta), meta.issuer, form, headers)
        reply = await fetch.request("POST", meta.token_endpoint, "identity provider's token endpoint", data=form, headers=headers)
        if reply.status != 200 or reply.body is None:
            error = reply.body.get("error") if reply.body else None
            raise OAuthError(
                f"the identity provider refused the token exchange for {quote(audience)!r}: {reply.describe()}",
                error=error if isinstance(error, str) else None,
                status=reply.status,
            )
        issued = reply.body.get("issued_token_type")
        if issued != ID_JAG:
            raise OAuthError(f"the identity provider issued a token of type {quote(issued)!r}, not an ID-JAG ({ID_JAG})")
        token = reply.body.get("access_token")
        if not isinstance(token, str) or not token:
            raise OAuthError("the identity provider's token exchange response has no access_token")
        return token
