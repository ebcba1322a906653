"""The OAuth client as an ``httpx.Auth``: :class:`OAuthClientAuth`.

Each request to the MCP server goes out with the current access token (refreshed first
when it has expired and a refresh token exists). The responses that matter:

* **401**: the token is missing, expired, revoked or from an authorization server the
  server no longer trusts. The flow reads the ``Bearer`` challenge, discovers the
  server's metadata again (so a change of authorization server is noticed: tokens and
  registrations of the old one are never sent to the new one), refreshes the token
  when it can (once per request), else gets a new one, and resends the request. A
  request gets at most two such rounds; the second 401 after that is returned.
* **403** with ``error="insufficient_scope"``: step-up. The flow asks for the union of
  the scopes it asked for before and the challenged ones, at most ``max_step_ups``
  times per request; the last 403 is returned (a permanent authorization failure).

Getting tokens is single-flight: concurrent requests that need a token share one
operation (one login, one refresh), which also survives the cancellation of the request
that started it (a deadline that expires during a login does not abandon the login for
the requests that follow). Failures raise :class:`~.errors.OAuthError` out of the
request. Tokens are sent only to the MCP server this object first served (its URL is
bound on the first request); requests to any other URL pass through untouched.

Every URL the flow fetches (or opens in the browser) because the MCP server named it
passes the target policy first (``targets.py``: a server that is not local cannot send
the client to private, loopback or link-local addresses); the address the client
reached the MCP server at, read from its responses, is what "its own origin" means there.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator

import httpx

from .acquire import AssertionProvider, Grant, TokenSource
from .challenge import find_challenge
from .errors import OAuthError
from .fetch import Fetcher
from .loopback import RedirectHandler
from .settings import OAuthClientMetadata, PreRegisteredClient
from .storage import InMemoryTokenStorage, Tokens, TokenStorage
from .targets import TargetPolicy
from .urls import canonical_resource

__all__ = ["OAuthClientAuth"]

logger = logging.getLogger("mcpkit.auth")

#: The default target policy: no exceptions.
DEFAULT_TARGETS = TargetPolicy()

Operation = Callable[[Fetcher], Awaitable[Tokens | None]]


class OAuthClientAuth(httpx.Auth):
    """Authorization for an MCP server over HTTP, given as ``HttpTransport(url, auth=...)``.

    With a ``redirect`` handler (a :class:`LoopbackRedirect` for desktop and CLI
    programs), users log in with the authorization code flow and PKCE; without one,
    the client gets tokens for itself with ``client_credentials`` (pass ``client``).
    ``grant`` overrides that choice. Given an ``assertion``, the grant is ``"jwt_bearer"``
    (RFC 7523): an identity assertion traded for a token, which ``assertion(issuer,
    resource)`` (sync or async) returns — a workload identity token, or the enterprise
    ID-JAG an :class:`~.token_exchange.IdJagExchange` gets from the identity provider
    (enterprise-managed authorization); a failure there is final, never retried with
    another grant.

    ``client``: credentials registered beforehand (:class:`PreRegisteredClient`); without
    them the client uses its Client ID Metadata Document (``metadata.metadata_url``) when
    the authorization server supports those, else registers dynamically with
    ``metadata`` (:class:`OAuthClientMetadata`). ``storage`` keeps tokens and
    registrations (default: an :class:`InMemoryTokenStorage`). ``max_step_ups`` bounds
    the re-authorizations for more scopes per request. ``timeout`` bounds each request
    to the authorization server and metadata endpoints (the login itself is bounded by
    the redirect handler). ``http_client`` is an ``httpx.AsyncClient`` for those
    requests (not closed here; never the transport's own client). ``allow_http`` allows
    plain-HTTP authorization endpoints on hosts that are not loopback (never do this in
    production). ``server_url`` names the MCP endpoint; by default it is the URL of the
    first request. DPoP (RFC 9449, with ES256): when the authorization server supports
    it, tokens are bound to a key of this process and every request carries a fresh
    proof (server nonces are honoured) — by default (``dpop=None``) when the MCP
    server's metadata says it takes DPoP tokens too (``dpop_signing_alg_values_supported``,
    as mcpkit's ``ResourceServer(dpop=...)`` does); ``dpop=True`` whatever the MCP server
    says, ``dpop=False`` never.
    ``targets`` is where the client may go when the MCP server names a URL (its
    metadata, its authorization server and their endpoints): by default a
    :class:`TargetPolicy` that, for an MCP server that is not local, refuses private,
    loopback and link-local addresses, whatever name or form leads there; pass
    ``TargetPolicy(allow=[...])`` for hosts or networks you trust, or None for no check.

    Scopes asked for: the 401's ``scope``, else the server's ``scopes_supported``,
    else none (the parameter is left out); plus ``offline_access`` when the
    authorization server lists it (for a refresh token). Raises ``ValueError`` for
    settings that cannot work; the requests it authorizes may raise :class:`OAuthError`.
    Works with ``httpx.AsyncClient`` only.
    """

    def __init__(
        self,
        *,
        redirect: RedirectHandler | None = None,
        client: PreRegisteredClient | None = None,
        metadata: OAuthClientMetadata | None = None,
        storage: TokenStorage | None = None,
        grant: Grant | None = None,
        max_step_ups: int = 2,
        timeout: float = 10.0,
        http_client: httpx.AsyncClient | None = None,
        allow_http: bool = False,
        server_url: str | None = None,
        assertion: AssertionProvider | None = None,
        dpop: bool | None = None,
        targets: TargetPolicy | None = DEFAULT_TARGETS,
    ) -> None:
        if grant is None:
            grant = "authorization_code" if redirect is not None else "client_credentials"
            grant = "jwt_bearer" if assertion is not None else grant
        self.grant: Grant = grant
        if (self.grant == "jwt_bearer") != (assertion is not None):
            raise ValueError("an assertion provider goes with grant='jwt_bearer', and only with it")
        if self.grant == "authorization_code" and redirect is None:
            raise ValueError("the authorization_code grant needs a redirect handler (LoopbackRedirect, say)")
        if self.grant == "client_credentials" and client is not None and not (client.client_secret or client.private_key):
            raise ValueError("the client_credentials grant needs a client_secret or a private_key")
        if max_step_ups < 0 or timeout <= 0:
            raise ValueError("max_step_ups must be >= 0 and timeout > 0")
        self.redirect = redirect
        self.assertion = assertion
        self.metadata = metadata or OAuthClientMetadata()
        self.storage: TokenStorage = storage if storage is not None else InMemoryTokenStorage()
        self.max_step_ups = max_step_ups
        self.timeout = timeout
        self.allow_http = allow_http
        self._http_client = http_client
        self._source = TokenSource(
            self.grant, self.storage, self.metadata, client, redirect, assertion, allow_http, dpop, server_url=server_url
        )
        self._task: asyncio.Task[Tokens | None] | None = None
        self.targets = targets
        #: The IP address the MCP server's responses came from (None until one did).
        self._server_address: str | None = None

    @property
    def client(self) -> PreRegisteredClient | None:
        """The pre-registered credentials, bound to their authorization server once used."""
        return self._source.client

    async def logout(self) -> bool:
        """Sign out of the MCP server: its tokens are forgotten (here and in
        ``storage``) and revoked at the authorization server when it offers revocation
        (RFC 7009: the refresh token, ending the grant, then the access token). Waits
        for a login or refresh in progress first. The next request needs a new
        authorization. Returns whether the authorization server was told. Raises
        :class:`OAuthError` if it refused or could not be reached — the tokens are
        forgotten locally all the same. Cancelled, the local tokens may already be gone."""
        task = self._task
        if task is not None and not task.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(task)
        if self._source.server_url is None:  # never used: nothing to forget
            return False
        async with self._fetcher() as fetch:
            return await self._source.revoke(fetch)

    # -- httpx.Auth ----------------------------------------------------------------

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        """Not supported: raises ``RuntimeError`` (use ``httpx.AsyncClient``)."""
        raise RuntimeError("OAuthClientAuth works with httpx.AsyncClient only")

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """Send ``request`` with a token; on 401 or 403 ``insufficient_scope`` get a
        (better) token and send it again, within the bounds of the class docstring.
        Raises :class:`OAuthError` when no token can be had."""
        if not self._applies(request.url):
            yield request
            return
        tokens = await self._before_send()
        self._authorize(request, tokens)
        response = yield request
        unauthorized = step_ups = nonces = 0
        while request.method != "DELETE":  # ending a session is not worth a login
            self._note_address(response)
            challenge = find_challenge(response.headers.get_list("www-authenticate"))
            dpop = self._source.dpop
            renewed = dpop is not None and dpop.remember(str(request.url), response.headers)
            if response.status_code == 401 and challenge.error == "use_dpop_nonce" and renewed and nonces < 1:
                nonces += 1  # the server wants its nonce in the proof: same token, new proof
                await response.aread()
                self._authorize(request, tokens)
                response = yield request
                continue
            if response.status_code == 401 and unauthorized < 2:
                unauthorized += 1
                operation = functools.partial(self._source.recover, challenge, tokens, unauthorized == 1)
            elif response.status_code == 403 and challenge.error == "insufficient_scope" and step_ups < self.max_step_ups:
                step_ups += 1
                operation = functools.partial(self._source.step_up, challenge, tokens)
            else:
                return
            await response.aread()  # httpx would read it after the operation: free the connection now
            try:
                tokens = await self._single(operation)
            except OAuthError as exc:
                if request.method == "POST":
                    raise
                logger.warning("%s without authorization: %s", request.method, exc)  # a stream: its refusal is the answer
                return
            self._authorize(request, tokens)
            response = yield request

    # -- the request side ------------------------------------------------------------

    def _note_address(self, response: httpx.Response) -> None:
        """Remember the address the MCP server answered from, if the connection says."""
        stream = response.extensions.get("network_stream")
        try:
            address = stream.get_extra_info("server_addr") if stream is not None else None
        except Exception:  # a transport of another kind: the address stays unknown
            address = None
        if isinstance(address, tuple) and address and isinstance(address[0], str):
            self._server_address = address[0]

    async def _vet(self, url: str, what: str) -> str | None:
        """The target policy's verdict on ``url`` (see :class:`TargetPolicy`)."""
        if self.targets is None:
            return None
        server_url = self._source.server_url or url
        return await self.targets.check(
            url, what=what, server_url=server_url, server_address=self._server_address, timeout=self.timeout
        )

    def _applies(self, url: httpx.URL) -> bool:
        """Whether ``url`` is the MCP server's (binding it on the first request)."""
        target = str(url.copy_with(query=None, fragment=None))
        if self._source.server_url is None:
            self._source.server_url = target
        try:
            return canonical_resource(target) == canonical_resource(self._source.server_url)
        except ValueError:
            return False

    def _authorize(self, request: httpx.Request, tokens: Tokens | None) -> None:
        """Put ``tokens`` on ``request``: a Bearer token, or a DPoP token with a fresh proof."""
        request.headers.pop("DPoP", None)
        dpop = self._source.dpop
        if tokens is None:
            request.headers.pop("Authorization", None)
        elif tokens.token_type == "DPoP" and dpop is not None:
            request.headers["Authorization"] = f"DPoP {tokens.access_token}"
            request.headers["DPoP"] = dpop.proof(request.method, str(request.url), tokens.access_token)
        else:
            request.headers["Authorization"] = f"Bearer {tokens.access_token}"

    async def _before_send(self) -> Tokens | None:
        """The tokens to send: the stored ones, refreshed first if expired."""
        tokens = await self._source.current()
        if tokens is None or not tokens.expired():
            return tokens
        if tokens.refresh_token is None:
            return None
        try:
            return await self._single(functools.partial(self._source.refresh_expired, tokens))
        except OAuthError as exc:
            logger.info("refreshing the expired access token failed: %s", exc)
            return None

    # -- operations (one at a time) ------------------------------------------------------

    async def _single(self, operation: Operation) -> Tokens | None:
        """Run ``operation`` unless one is running already, then wait for whichever runs.
        Cancelling the wait does not cancel the operation."""
        task = self._task
        if task is None or task.done():
            task = asyncio.ensure_future(self._with_fetcher(operation))
            task.add_done_callback(lambda t: t.cancelled() or t.exception())
            self._task = task
        return await asyncio.shield(task)

    async def _with_fetcher(self, operation: Operation) -> Tokens | None:
        async with self._fetcher() as fetch:
            return await operation(fetch)

    @contextlib.asynccontextmanager
    async def _fetcher(self) -> AsyncIterator[Fetcher]:
        if self._http_client is not None:
            yield Fetcher(self._http_client, self.timeout, self._vet)
            return
        async with httpx.AsyncClient(timeout=self.timeout, follow_redirects=False) as client:
            yield Fetcher(client, self.timeout, self._vet)
