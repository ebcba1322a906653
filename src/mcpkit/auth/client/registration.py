"""Getting a client identity at an authorization server, in the spec's order:

1. credentials registered beforehand (:class:`~.settings.PreRegisteredClient`), if they
   belong to this server;
2. a registration obtained earlier from this server and kept in the storage (only ever
   used with the server that issued it);
3. a Client ID Metadata Document: the document's URL is the ``client_id``, when the
   server advertises ``client_id_metadata_document_supported``;
4. dynamic client registration (RFC 7591) at the server's ``registration_endpoint``,
   with ``application_type``, the redirect URI and ``refresh_token`` among the grant
   types; the result is saved for next time.

Anything else is an :class:`~.errors.OAuthError` telling the user to pre-register.
"""

from __future__ import annotations

from .client_auth import choose_secret_method
from .discovery import ServerMetadata
from .errors import OAuthError, quote
from .fetch import Fetcher
from .settings import OAuthClientMetadata, PreRegisteredClient
from .storage import RegisteredClient, TokenStorage, client_key

__all__ = ["obtain_client", "pre_registered"]

_SECRET_METHODS = ("client_secret_basic", "client_secret_post")


def pre_registered(pre: PreRegisteredClient, meta: ServerMetadata) -> RegisteredClient:
    """``pre`` as the client identity at ``meta``'s server. Raises :class:`OAuthError`
    if the credentials name another issuer."""
    if pre.issuer is not None and pre.issuer != meta.issuer:
        raise OAuthError(
            f"the pre-registered client {quote(pre.client_id)!r} belongs to {quote(pre.issuer)!r}, "
            f"but the server now names the authorization server {quote(meta.issuer)!r}"
        )
    method = pre.auth_method
    if method is None:
        if pre.private_key is not None:
            method = "private_key_jwt"
        elif pre.client_secret:
            method = choose_secret_method(meta.token_auth_methods)
        else:
            method = "none"
    return RegisteredClient(
        client_id=pre.client_id,
        issuer=meta.issuer,
        auth_method=method,
        client_secret=pre.client_secret,
        source="pre-registered",
        private_key=pre.private_key,
        signing_alg=pre.signing_alg,
        key_id=pre.key_id,
    )


def _requested_method(metadata: OAuthClientMetadata, meta: ServerMetadata, grant: str) -> str:
    if metadata.token_endpoint_auth_method is not None:
        return metadata.token_endpoint_auth_method
    supported = meta.token_auth_methods
    if grant == "authorization_code" and (supported is None or "none" in supported):
        return "none"  # a native app cannot keep a secret anyway
    return choose_secret_method(supported)


async def _register(
    fetch: Fetcher, meta: ServerMetadata, metadata: OAuthClientMetadata, redirect_uri: str | None, grant: str
) -> RegisteredClient:
    assert meta.registration_endpoint is not None
    method = _requested_method(metadata, meta, grant)
    grants = ["authorization_code", "refresh_token"] if grant == "authorization_code" else ["client_credentials"]
    body = metadata.registration_body(redirect_uri, grants, method)
    reply = await fetch.request("POST", meta.registration_endpoint, "registration endpoint", json_body=body)
    doc = reply.body
    if reply.status not in (200, 201) or doc is None or not isinstance(doc.get("client_id"), str) or not doc["client_id"]:
        error = doc.get("error") if doc else None
        raise OAuthError(
            f"dynamic client registration at {quote(meta.registration_endpoint)} failed: {reply.describe()}",
            error=error if isinstance(error, str) else None,
            status=reply.status,
        )
    secret = doc.get("client_secret") if isinstance(doc.get("client_secret"), str) else None
    granted = doc.get("token_endpoint_auth_method")
    method = granted if isinstance(granted, str) and granted in ("none", *_SECRET_METHODS) else method
    if method in _SECRET_METHODS and not secret:
        method = "none"
    expires = doc.get("client_secret_expires_at")
    return RegisteredClient(
        client_id=doc["client_id"],
        issuer=meta.issuer,
        auth_method=method,
        client_secret=secret,
        secret_expires_at=float(expires) if isinstance(expires, (int, float)) and not isinstance(expires, bool) else 0,
        redirect_uris=[redirect_uri] if redirect_uri is not None else [],
    )


async def obtain_client(
    fetch: Fetcher,
    storage: TokenStorage,
    meta: ServerMetadata,
    *,
    pre: PreRegisteredClient | None,
    metadata: OAuthClientMetadata,
    redirect_uri: str | None,
    grant: str,
    register: bool = True,
) -> RegisteredClient:
    """The client identity to use with ``meta``'s server (see the module docstring);
    without ``register``, only one that exists already (a stored registration is then
    used whatever its redirect URI: to refresh a token, say). Raises
    :class:`OAuthError` if there is no way to get one."""
    if pre is not None:
        return pre_registered(pre, meta)
    stored = RegisteredClient.from_record(await storage.load(client_key(meta.issuer)))
    if stored is not None and stored.issuer == meta.issuer and stored.usable(redirect_uri if register else None):
        return stored
    if grant == "authorization_code" and metadata.metadata_url and meta.client_id_metadata_documents:
        return RegisteredClient(client_id=metadata.metadata_url, issuer=meta.issuer, source="metadata-document")
    if not register:
        raise OAuthError(f"there is no client registration with {quote(meta.issuer)!r} to use")
    if meta.registration_endpoint is None:
        raise OAuthError(
            f"cannot get a client id from {quote(meta.issuer)!r}: it offers no dynamic registration"
            + ("" if metadata.metadata_url else " and no client ID metadata documents were configured")
            + "; pass PreRegisteredClient(...) with credentials registered there"
        )
    client = await _register(fetch, meta, metadata, redirect_uri, grant)
    await storage.save(client_key(meta.issuer), client.record())
    return client


async def forget_client(storage: TokenStorage, client: RegisteredClient) -> bool:
    """Drop a stored registration that the server no longer accepts; True if there was
    one to drop (pre-registered and metadata-document clients are never stored)."""
    if client.source != "registered":
        return False
    await storage.save(client_key(client.issuer), None)
    return True
