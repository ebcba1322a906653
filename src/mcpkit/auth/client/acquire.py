"""Getting tokens: the OAuth side of :class:`~.flow.OAuthClientAuth`.

A :class:`TokenSource` knows the MCP server, what was discovered about it, the current
tokens (kept in the storage) and how to get new ones: after a 401 (:meth:`recover`:
discover again, refresh once, else authorize), after a 403 ``insufficient_scope``
(:meth:`step_up`: the union of the scopes asked before and now), or before sending an
expired token (:meth:`refresh_expired`). Each operation takes the :class:`~.fetch.Fetcher`
to use and the tokens the failed request carried: if the current tokens are already
different (another request renewed them meanwhile), it returns those instead.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Literal

from . import authorize, grants
from .challenge import Challenge
from .discovery import ResourceInfo, ServerMetadata, discover_resource, discover_server
from .dpop import DPoP, supported
from .errors import OAuthError
from .fetch import Fetcher
from .loopback import RedirectHandler
from .registration import forget_client, obtain_client
from .settings import OAuthClientMetadata, PreRegisteredClient
from .storage import RegisteredClient, Tokens, TokenStorage, tokens_key
from .urls import canonical_resource, check_transport

__all__ = ["TokenSource", "Grant", "AssertionProvider", "union"]

logger = logging.getLogger("mcpkit.auth")

Grant = Literal["authorization_code", "client_credentials", "jwt_bearer"]
#: Makes the assertion of the ``jwt_bearer`` grant, given the issuer and the resource.
AssertionProvider = Callable[[str, str], str | Awaitable[str]]


def superseded(current: Tokens | None, sent: Tokens | None) -> bool:
    """Whether another request already replaced the tokens ``sent`` with usable ones."""
    if current is None or current.expired():
        return False
    return sent is None or current.access_token != sent.access_token


def union(first: str | None, second: str | None) -> str | None:
    """The scopes of both space-separated lists, in order, without repeats."""
    merged = list(dict.fromkeys([*(first or "").split(), *(second or "").split()]))
    return " ".join(merged) or None


@dataclasses.dataclass
class TokenSource:
    """The tokens for one MCP server, and the ways to get them (the module docstring)."""

    grant: Grant
    storage: TokenStorage
    metadata: OAuthClientMetadata
    client: PreRegisteredClient | None
    redirect: RedirectHandler | None
    assertion: AssertionProvider | None
    allow_http: bool
    use_dpop: bool | None
    server_url: str | None = None
    resource: ResourceInfo | None = None
    meta: ServerMetadata | None = None
    tokens: Tokens | None = None
    dpop: DPoP | None = None
    loaded: bool = False

    async def current(self) -> Tokens | None:
        """The tokens, loaded from the storage the first time (DPoP-bound ones are
        bound to a key of an earlier process: they are dropped)."""
        if not self.loaded:
            assert self.server_url is not None
            tokens = Tokens.from_record(await self.storage.load(tokens_key(canonical_resource(self.server_url))))
            self.tokens = tokens if tokens is None or tokens.token_type != "DPoP" else None
            self.loaded = True
        return self.tokens

    async def refresh_expired(self, sent: Tokens, fetch: Fetcher) -> Tokens | None:
        """Before sending: a refreshed copy of the expired ``sent`` tokens."""
        current = self.tokens
        if superseded(current, sent):
            return current
        if current is None or current.refresh_token is None:
            return None
        return await self._refresh(fetch, await self._issuer_of(fetch, current), current)

    async def recover(self, challenge: Challenge, sent: Tokens | None, allow_refresh: bool, fetch: Fetcher) -> Tokens | None:
        """After a 401: new tokens (refreshed, or from a new authorization)."""
        current = self.tokens
        if superseded(current, sent):
            return current
        assert self.server_url is not None
        resource = await discover_resource(fetch, self.server_url, challenge.resource_metadata, allow_http=self.allow_http)
        self.resource = resource
        meta = await self._metadata_for(fetch, resource)
        if current is not None and current.issuer != meta.issuer:
            logger.info("the server now names the authorization server %s: dropping the old tokens", meta.issuer)
            current = None
            await self.keep(None)
        if allow_refresh and current is not None and current.refresh_token is not None:
            try:
                return await self._refresh(fetch, meta, current)
            except OAuthError as exc:
                logger.info("refreshing the access token failed, authorizing again: %s", exc)
        if challenge.scope is not None:
            base = challenge.scope
        elif resource.scopes_supported is not None:
            base = " ".join(resource.scopes_supported)
        else:
            base = None
        previous = current.requested_scope if current is not None else None
        return await self._obtain(fetch, meta, resource, union(previous, base))

    async def step_up(self, challenge: Challenge, sent: Tokens | None, fetch: Fetcher) -> Tokens | None:
        """After a 403 ``insufficient_scope``: a token for the scopes asked before and now."""
        current = self.tokens
        if superseded(current, sent):
            return current
        assert self.server_url is not None
        resource = self.resource
        if resource is None:
            resource = await discover_resource(fetch, self.server_url, challenge.resource_metadata, allow_http=self.allow_http)
            self.resource = resource
        meta = await self._metadata_for(fetch, resource)
        previous = current.requested_scope if current is not None and current.issuer == meta.issuer else None
        logger.info("the server asks for the scopes %r: authorizing again", challenge.scope)
        return await self._obtain(fetch, meta, resource, union(previous, challenge.scope))

    async def keep(self, tokens: Tokens | None) -> None:
        """Make ``tokens`` current and store them (None forgets them)."""
        self.tokens = tokens
        assert self.server_url is not None
        await self.storage.save(tokens_key(canonical_resource(self.server_url)), tokens.record() if tokens else None)

    async def revoke(self, fetch: Fetcher) -> bool:
        """Forget the tokens, here and in the storage, then revoke them at their
        authorization server when its metadata names a ``revocation_endpoint`` (RFC
        7009): the refresh token first (which ends the grant, its access tokens with
        it), then the access token. True if the server was told; False when there was
        nothing to revoke, no endpoint, or no client identity there to revoke with.
        Raises :class:`OAuthError` when the server refuses or cannot be reached (the
        tokens are forgotten here all the same)."""
        tokens = await self.current()
        await self.keep(None)
        if tokens is None:
            return False
        meta = await self._issuer_of(fetch, tokens)
        endpoint = meta.raw.get("revocation_endpoint")
        if not isinstance(endpoint, str) or not endpoint:
            logger.info("%s names no revocation endpoint: the tokens are only forgotten here", meta.issuer)
            return False
        endpoint = check_transport(endpoint, "revocation endpoint", allow_http=self.allow_http)
        try:
            client: RegisteredClient | None = await self._client_for(fetch, meta, None, register=False)
        except OAuthError as exc:
            logger.info("cannot revoke the tokens at %s: %s", meta.issuer, exc)
            return False
        for token, hint in ((tokens.refresh_token, "refresh_token"), (tokens.access_token, "access_token")):
            if token:
                await grants.revoke(fetch, endpoint, meta, client, token, hint)
        return True

    # -- the pieces ------------------------------------------------------------------

    async def _metadata_for(self, fetch: Fetcher, resource: ResourceInfo) -> ServerMetadata:
        """The metadata of the authorization server to use for ``resource``: the one the
        pre-registered credentials belong to if listed, else the first listed."""
        issuer = resource.authorization_servers[0]
        bound = self.client.issuer if self.client is not None else None
        if bound is not None and bound in resource.authorization_servers:
            issuer = bound
        if self.meta is None or self.meta.issuer != issuer:
            self.meta = await discover_server(fetch, issuer, legacy=resource.legacy, allow_http=self.allow_http)
        return self.meta

    async def _issuer_of(self, fetch: Fetcher, tokens: Tokens) -> ServerMetadata:
        """The metadata of the authorization server that issued ``tokens`` (the one known,
        else discovered again). Raises :class:`OAuthError`."""
        if self.meta is None or self.meta.issuer != tokens.issuer:
            self.meta = await discover_server(fetch, tokens.issuer, legacy=tokens.legacy, allow_http=self.allow_http)
        return self.meta

    def _dpop_for(self, meta: ServerMetadata, resource: ResourceInfo) -> DPoP | None:
        """The DPoP key to bind tokens from ``meta``'s server to: when it supports DPoP
        and ``use_dpop`` is True, or None (the default) and the MCP server's metadata
        says it takes DPoP tokens too — then without the JOSE libraries, Bearer."""
        if not self.use_dpop and not (self.use_dpop is None and supported(resource.dpop_algorithms)):
            return None
        if not supported(meta.dpop_algorithms):
            return None
        if self.dpop is None:
            try:
                self.dpop = DPoP()
            except OAuthError:
                if self.use_dpop:
                    raise
                logger.info("the server takes DPoP tokens, but PyJWT is not installed: asking for Bearer tokens")
                return None
        return self.dpop

    async def _client_for(
        self, fetch: Fetcher, meta: ServerMetadata, redirect_uri: str | None, register: bool = True
    ) -> RegisteredClient:
        pre = self.client
        if pre is not None and pre.issuer is None:
            pre = self.client = dataclasses.replace(pre, issuer=meta.issuer)  # bound to its first server
        return await obtain_client(
            fetch,
            self.storage,
            meta,
            pre=pre,
            metadata=self.metadata,
            redirect_uri=redirect_uri,
            grant=self.grant,
            register=register,
        )

    async def _obtain(self, fetch: Fetcher, meta: ServerMetadata, resource: ResourceInfo, scope: str | None) -> Tokens:
        """New tokens from the authorization server; a dynamically registered client that
        the server no longer knows is registered again, once."""
        if self.grant == "authorization_code" and scope and "offline_access" in (meta.scopes_supported or []):
            scope = union(scope, "offline_access")
        dpop = self._dpop_for(meta, resource)
        registered_again = False
        while True:
            client: RegisteredClient | None = None
            try:
                if self.grant == "jwt_bearer":
                    assert self.assertion is not None
                    made = self.assertion(meta.issuer, resource.resource)
                    assertion = await made if inspect.isawaitable(made) else made
                    client = await self._client_for(fetch, meta, None, register=False) if self.client is not None else None
                    tokens = await grants.jwt_bearer(
                        fetch, meta, client, assertion=assertion, resource=resource.resource, scope=scope, dpop=dpop
                    )
                elif self.grant == "client_credentials":
                    client = await self._client_for(fetch, meta, None)
                    tokens = await grants.client_credentials(
                        fetch, meta, client, resource=resource.resource, scope=scope, dpop=dpop
                    )
                else:
                    assert self.redirect is not None
                    if meta.authorization_endpoint is not None:  # the browser goes there: the same policy applies
                        await fetch.vet(meta.authorization_endpoint, "authorization endpoint")
                    redirect_uri = await self.redirect.redirect_uri()
                    client = await self._client_for(fetch, meta, redirect_uri)
                    tokens = await self._log_in(fetch, meta, client, redirect_uri, resource, scope, dpop)
            except OAuthError as exc:
                stale = not registered_again and exc.error == "invalid_client" and self.grant != "jwt_bearer"
                if stale and client is not None and await forget_client(self.storage, client):
                    registered_again = True
                    continue
                raise
            await self.keep(tokens)
            return tokens

    async def _log_in(
        self,
        fetch: Fetcher,
        meta: ServerMetadata,
        client: RegisteredClient,
        redirect_uri: str,
        resource: ResourceInfo,
        scope: str | None,
        dpop: DPoP | None,
    ) -> Tokens:
        """The authorization code flow: the user authorizes through the redirect handler."""
        assert self.redirect is not None
        pending = authorize.start(meta, client.client_id, redirect_uri, resource=resource.resource, scope=scope)
        logger.info("authorizing at %s", meta.issuer)
        code = authorize.finish(pending, await self.redirect.authorize(pending.url))
        return await grants.exchange_code(
            fetch,
            meta,
            client,
            code=code,
            verifier=pending.verifier,
            redirect_uri=redirect_uri,
            resource=resource.resource,
            scope=scope,
            dpop=dpop,
        )

    async def _refresh(self, fetch: Fetcher, meta: ServerMetadata, tokens: Tokens) -> Tokens:
        """Refreshed tokens; a refresh token the server refuses is dropped. Raises
        :class:`OAuthError`."""
        resource = tokens.resource or (self.resource.resource if self.resource else canonical_resource(self.server_url or ""))
        client = await self._client_for(fetch, meta, None, register=False)
        dpop = self.dpop if tokens.token_type == "DPoP" else None
        try:
            fresh = await grants.refresh(fetch, meta, client, tokens, resource, dpop)
        except OAuthError as exc:
            if exc.error in ("invalid_grant", "invalid_client", "unauthorized_client"):
                await self.keep(dataclasses.replace(tokens, refresh_token=None))
            raise
        logger.info("refreshed the access token from %s", meta.issuer)
        await self.keep(fresh)
        return fresh
