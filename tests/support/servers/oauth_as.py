"""An OAuth 2.1 authorization server for tests, built on authlib, and a guarded MCP endpoint.

authlib supplies the protocol (authorization code + PKCE S256 with required challenge,
refresh tokens, client_credentials, RFC 7591 registration, RFC 9207 ``iss``, client
authentication by ``none``, ``client_secret_basic``, ``client_secret_post`` and
``private_key_jwt``, RFC 7662 introspection, RFC 7009 revocation, and with
``jwt_access_tokens=True`` RFC 9068 JWT access tokens signed with an ES256 key published at
``/jwks``); this module adds only what authlib leaves to a framework: a Starlette front
(authlib ships server integrations for Flask and Django only, so the requests are adapted
here), in-memory storage, an automatic consent by the user ``alice`` — or by whoever the
"browser" names in an ``X-Test-User`` header (the tests drive the authorization endpoint
with httpx as the browser) — and RFC 8707: the ``resource`` of the token request becomes
the token's audience.

:class:`Guard` is the resource server: an ASGI app that serves Protected Resource
Metadata, checks each POST's bearer token (known, unexpired, issued for this resource)
and the scopes of the tool it calls, answers 401/403 with the challenge the MCP spec
describes, and hands the rest to an mcpkit server's ASGI app.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from authlib.oauth2 import AuthorizationServer, OAuth2Error
from authlib.oauth2.rfc6749 import ClientMixin, JsonPayload, JsonRequest, OAuth2Payload, OAuth2Request, grants
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7523 import JWTBearerClientAssertion, JWTBearerGrant
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from authlib.oauth2.rfc9068 import JWTBearerTokenGenerator
from authlib.oauth2.rfc9207 import IssuerParameter
from joserfc.jwk import ECKey, KeySet
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


class User(str):
    """A user name, as authlib's JWT access tokens want it (``get_user_id``)."""

    def get_user_id(self) -> str:
        return str(self)


USER = User("alice")
AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post", "private_key_jwt"]


@dataclass
class Client(ClientMixin):  # type: ignore[misc]
    client_id: str
    auth_method: str = "none"
    secret: str | None = None
    redirect_uris: list[str] = field(default_factory=list)
    grant_types: list[str] = field(default_factory=lambda: ["authorization_code", "refresh_token"])
    public_key: Any = None  # a joserfc key, for private_key_jwt
    withheld: set[str] = field(default_factory=set)  # scopes this server never grants
    introspects: bool = False  # a resource server allowed to introspect tokens (RFC 7662)

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        return self.redirect_uris[0] if self.redirect_uris else None

    def get_allowed_scope(self, scope: str) -> str:
        return " ".join(s for s in (scope or "").split() if s not in self.withheld)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.redirect_uris

    def check_client_secret(self, client_secret: str) -> bool:
        return self.secret is not None and secrets.compare_digest(self.secret, client_secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == self.auth_method

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.grant_types


@dataclass
class Code:
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    resource: str | None
    code_challenge: str
    code_challenge_method: str
    user: str = USER

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope


@dataclass
class Token:
    access_token: str
    client_id: str
    scope: str
    audience: str | None
    expires_at: float
    refresh_token: str | None = None
    revoked: bool = False  # the whole grant: access and refresh token
    access_revoked: bool = False  # the access token only (RFC 7009 with token_type_hint=access_token)
    user: str | None = None  # None for a client acting for itself
    issued_at: float = field(default_factory=time.time)

    def get_scope(self) -> str:
        return self.scope

    def check_client(self, client: Client) -> bool:
        return self.client_id == client.client_id

    def is_expired(self) -> bool:
        return False  # refresh tokens do not expire here

    def is_revoked(self) -> bool:
        return self.revoked


class _Response(Response):
    """A response with the ``location`` attribute authlib's RFC 9207 extension rewrites."""

    @property
    def location(self) -> str | None:
        return self.headers.get("location")

    @location.setter
    def location(self, value: str) -> None:
        self.headers["location"] = value


class _Payload(OAuth2Payload):  # type: ignore[misc]
    def __init__(self, values: dict[str, str]) -> None:
        self._values = values

    @property
    def data(self) -> dict[str, str]:
        return self._values

    @property
    def datalist(self) -> dict[str, list[str]]:
        return {k: [v] for k, v in self._values.items()}


class _Request(OAuth2Request):  # type: ignore[misc]
    def __init__(self, method: str, url: str, headers: Any, query: dict[str, str], form: dict[str, str]) -> None:
        super().__init__(method, url, headers=headers)
        self._query, self._form = query, form
        self.payload = _Payload({**query, **form})

    @property
    def args(self) -> dict[str, str]:
        return self._query

    @property
    def form(self) -> dict[str, str]:
        return self._form


class _JsonPayload(JsonPayload):  # type: ignore[misc]
    def __init__(self, body: dict[str, Any]) -> None:
        self._body = body

    @property
    def data(self) -> dict[str, Any]:
        return self._body


class _JsonRequest(JsonRequest):  # type: ignore[misc]
    def __init__(self, method: str, url: str, headers: Any, body: dict[str, Any]) -> None:
        super().__init__(method, url, headers)
        self.payload = _JsonPayload(body)


class PrivateKeyJWT(JWTBearerClientAssertion):  # type: ignore[misc]
    """``private_key_jwt`` (RFC 7523 §2.2): the audience is the issuer (or the token endpoint)."""

    CLIENT_AUTH_METHOD = "private_key_jwt"

    def __init__(self, server: LoopbackAuthorizationServer) -> None:
        super().__init__(validate_jti=True)
        self._server = server
        self._seen: set[str] = set()

    def get_audiences(self) -> list[str]:
        return [self._server.issuer, f"{self._server.issuer}/token"]

    def validate_jti(self, claims: Any, jti: str) -> bool:
        if jti in self._seen:
            return False
        self._seen.add(jti)
        return True

    def resolve_client_public_key(self, client: Client) -> Any:
        return client.public_key


class LoopbackAuthorizationServer(AuthorizationServer):  # type: ignore[misc]
    """authlib's server with in-memory storage; ``log`` records (endpoint, parameters).

    ``jwt_access_tokens``: access tokens are RFC 9068 JWTs (``iss``, ``sub``, ``aud`` = the
    RFC 8707 ``resource``, ``client_id``, ``scope``, ``exp``) signed by :attr:`signing_key`,
    whose public half ``/jwks`` serves; otherwise they are opaque. ``lifetime``, when set,
    is how long access tokens really live, whatever ``expires_in`` tells the client (as if
    the resource server's clock ran ahead of the client's)."""

    def __init__(
        self, issuer: str, *, expires_in: int = 3600, scopes: list[str] | None = None, jwt_access_tokens: bool = False
    ) -> None:
        super().__init__(scopes_supported=scopes)
        self.issuer = issuer
        self.clients: dict[str, Client] = {}
        self.codes: dict[str, Code] = {}
        self.tokens: dict[str, Token] = {}
        self.log: list[tuple[str, dict[str, str]]] = []
        self.expires_in = expires_in
        self.lifetime: int | None = None
        self.iss_in_redirect = True
        self.withheld: set[str] = set()
        self.deny_consent = False
        self.signing_key = ECKey.generate_key("P-256", parameters={"kid": "as-1", "use": "sig", "alg": "ES256"})
        self.jwt_access_tokens = jwt_access_tokens
        self.resource_requested: str | None = None  # while a token request is answered: its RFC 8707 resource
        if jwt_access_tokens:
            self.register_token_generator("default", _JWTAccessTokens(self))
        else:
            self.register_token_generator("default", BearerTokenGenerator(self._new_token, self._new_token, self._lifetime))
        self.register_grant(_AuthorizationCode, [CodeChallenge(required=True)])
        self.register_grant(_Refresh)
        self.register_grant(_ClientCredentials)
        self.register_grant(_JwtBearer)
        self.register_client_auth_method("private_key_jwt", PrivateKeyJWT(self))
        self.register_endpoint(_Registration)
        self.register_endpoint(_Introspection)
        self.register_endpoint(_Revocation)
        self.register_extension(_Issuer(self))

    @staticmethod
    def _new_token(**_: Any) -> str:
        return secrets.token_urlsafe(24)

    def _lifetime(self, client: Client, grant_type: str) -> int:
        return self.expires_in

    def query_client(self, client_id: str) -> Client | None:
        return self.clients.get(client_id)

    def add_resource_server(self, client_id: str, secret: str) -> None:
        """Register a resource server that may introspect tokens (HTTP Basic)."""
        self.clients[client_id] = Client(client_id, "client_secret_basic", secret, grant_types=[], introspects=True)

    def create_token_response(self, request: _Request | None = None) -> Response:
        self.resource_requested = request.payload.data.get("resource") if request is not None else None
        try:
            return super().create_token_response(request)  # type: ignore[no-any-return]
        finally:
            self.resource_requested = None

    def save_token(self, token: dict[str, Any], request: _Request) -> None:
        user = getattr(request, "user", None)
        self.tokens[token["access_token"]] = Token(
            access_token=token["access_token"],
            client_id=request.client.client_id,
            scope=token.get("scope") or "",
            audience=request.payload.data.get("resource"),
            expires_at=time.time() + self.access_lifetime(token["expires_in"]),
            refresh_token=token.get("refresh_token"),
            user=str(user) if user else None,
        )

    def access_lifetime(self, expires_in: int) -> int:
        """How long an access token announced to live ``expires_in`` seconds really lives."""
        return self.lifetime if self.lifetime is not None else expires_in

    def find_token(self, value: str, hint: str | None = None) -> Token | None:
        """The record whose access token (or refresh token) is ``value``."""
        if hint != "refresh_token" and value in self.tokens:
            return self.tokens[value]
        if hint != "access_token":
            for token in self.tokens.values():
                if token.refresh_token == value:
                    return token
        return None

    def jwks(self) -> dict[str, Any]:
        """The public keys access tokens are signed with."""
        return dict(KeySet([self.signing_key]).as_dict(private=False))

    def get_error_uri(self, request: Any, error: Any) -> None:
        return None

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        return None

    def create_oauth2_request(self, request: _Request) -> _Request:
        return request

    def create_json_request(self, request: _JsonRequest) -> _JsonRequest:
        return request

    def handle_response(self, status: int, body: Any, headers: Any) -> Response:
        content = json.dumps(body) if isinstance(body, dict) else (body or "")
        return _Response(content, status_code=status, headers=dict(headers))

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "registration_endpoint": f"{self.issuer}/register",
            "scopes_supported": self.scopes_supported,
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials", JWTBearerGrant.GRANT_TYPE],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": AUTH_METHODS,
            "token_endpoint_auth_signing_alg_values_supported": ["ES256", "RS256"],
            "authorization_response_iss_parameter_supported": True,
            "introspection_endpoint": f"{self.issuer}/introspect",
            "revocation_endpoint": f"{self.issuer}/revoke",
            "revocation_endpoint_auth_methods_supported": AUTH_METHODS,
            **({"jwks_uri": f"{self.issuer}/jwks"} if self.jwt_access_tokens else {}),
        }

    def app(self) -> Starlette:
        async def adapt(request: Request) -> _Request:
            form = {k: str(v) for k, v in (await request.form()).items()} if request.method == "POST" else {}
            query = dict(request.query_params)
            self.log.append((request.url.path.rsplit("/", 1)[-1], {**query, **form}))
            return _Request(request.method, str(request.url), request.headers, query, form)

        async def metadata(request: Request) -> JSONResponse:
            self.log.append(("metadata", {}))
            return JSONResponse(self.metadata())

        async def authorize(request: Request) -> Response:
            req = await adapt(request)
            try:
                grant = self.get_consent_grant(req, end_user=USER)
            except OAuth2Error as error:  # no client, or a redirect URI it did not register: no redirect
                return JSONResponse({"error": error.error}, status_code=400)
            user = None if self.deny_consent else User(request.headers.get("x-test-user", USER))
            return self.create_authorization_response(req, grant_user=user, grant=grant)  # type: ignore[no-any-return]

        async def token(request: Request) -> Response:
            return self.create_token_response(await adapt(request))

        async def register(request: Request) -> Response:
            body = await request.json()
            self.log.append(("register", body))
            req = _JsonRequest("POST", str(request.url), request.headers, body)
            return self.create_endpoint_response("client_registration", req)  # type: ignore[no-any-return]

        async def introspect(request: Request) -> Response:
            return self.create_endpoint_response("introspection", await adapt(request))  # type: ignore[no-any-return]

        async def revoke(request: Request) -> Response:
            return self.create_endpoint_response("revocation", await adapt(request))  # type: ignore[no-any-return]

        async def jwks(request: Request) -> JSONResponse:
            self.log.append(("jwks", {}))
            return JSONResponse(self.jwks())

        return Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", metadata),
                Route("/authorize", authorize),
                Route("/token", token, methods=["POST"]),
                Route("/register", register, methods=["POST"]),
                Route("/introspect", introspect, methods=["POST"]),
                Route("/revoke", revoke, methods=["POST"]),
                Route("/jwks", jwks),
            ]
        )

    def calls(self, endpoint: str) -> list[dict[str, str]]:
        """The parameters of every request to ``endpoint`` (``token``, ``authorize``, ...)."""
        return [params for name, params in self.log if name == endpoint]


class _AuthorizationCode(grants.AuthorizationCodeGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS

    def save_authorization_code(self, code: str, request: _Request) -> Code:
        data = request.payload.data
        item = Code(
            code,
            request.client.client_id,
            data["redirect_uri"],
            data.get("scope", ""),
            data.get("resource"),
            data["code_challenge"],
            data.get("code_challenge_method", "plain"),
            User(request.user),
        )
        self.server.codes[code] = item
        return item

    def query_authorization_code(self, code: str, client: Client) -> Code | None:
        item: Code | None = self.server.codes.get(code)
        return item if item is not None and item.client_id == client.client_id else None

    def delete_authorization_code(self, authorization_code: Code) -> None:
        self.server.codes.pop(authorization_code.code, None)

    def authenticate_user(self, authorization_code: Code) -> User:
        return User(authorization_code.user)


class _Refresh(grants.RefreshTokenGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token: str) -> Token | None:
        for token in self.server.tokens.values():
            if token.refresh_token == refresh_token and not token.revoked:
                return token  # type: ignore[no-any-return]
        return None

    def authenticate_user(self, refresh_token: Token) -> User | None:
        return User(refresh_token.user) if refresh_token.user is not None else None

    def revoke_old_credential(self, refresh_token: Token) -> None:
        refresh_token.revoked = True


class _JwtBearer(JWTBearerGrant):  # type: ignore[misc]
    """RFC 7523 §2.1: the assertion's issuer is a client registered here with its key."""

    def resolve_issuer_client(self, issuer: str) -> Client | None:
        return self.server.clients.get(issuer)  # type: ignore[no-any-return]

    def resolve_client_public_key(self, client: Client) -> Any:
        return client.public_key

    def authenticate_user(self, subject: str) -> User:
        return User(subject)

    def has_granted_permission(self, client: Client, user: str) -> bool:
        return True

    def get_audiences(self) -> list[str]:
        return [self.server.issuer, f"{self.server.issuer}/token"]


class _ClientCredentials(grants.ClientCredentialsGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS: ClassVar[list[str]] = ["client_secret_basic", "client_secret_post", "private_key_jwt"]


class _Registration(ClientRegistrationEndpoint):  # type: ignore[misc]
    def authenticate_token(self, request: Any) -> bool:
        return True  # open registration, as MCP clients expect

    def get_server_metadata(self) -> dict[str, Any]:
        return self.server.metadata()  # type: ignore[no-any-return]

    def save_client(self, client_info: dict[str, Any], client_metadata: dict[str, Any], request: Any) -> Client:
        method = client_metadata.get("token_endpoint_auth_method", "client_secret_basic")
        client = Client(
            client_id=client_info["client_id"],
            auth_method=method,
            secret=client_info["client_secret"] if method != "none" else None,
            redirect_uris=list(client_metadata.get("redirect_uris", [])),
            grant_types=list(client_metadata.get("grant_types", ["authorization_code"])),
            withheld=self.server.withheld,
        )
        self.server.clients[client.client_id] = client
        return client


class _JWTAccessTokens(JWTBearerTokenGenerator):  # type: ignore[misc]
    """RFC 9068 access tokens: authlib's generator, with the audience the RFC 8707
    ``resource`` of the token request (authlib leaves that to the server) and the issuer
    read when the token is made (tests learn the port after building the server)."""

    def __init__(self, server: LoopbackAuthorizationServer) -> None:
        self._server = server
        super().__init__(
            server.issuer, alg="ES256", refresh_token_generator=server._new_token, expires_generator=server._lifetime
        )

    @property
    def issuer(self) -> str:
        return self._server.issuer

    @issuer.setter
    def issuer(self, value: str) -> None:
        pass  # always the server's

    def get_jwks(self) -> KeySet:
        return KeySet([self._server.signing_key])

    def get_audiences(self, client: Client, user: Any, scope: str) -> str:
        return self._server.resource_requested or client.client_id

    def get_extra_claims(self, client: Client, grant_type: str, user: Any, scope: str) -> dict[str, Any]:
        return {"exp": int(time.time()) + self._server.access_lifetime(self._server.expires_in)}


class _Introspection(IntrospectionEndpoint):  # type: ignore[misc]
    """RFC 7662, for resource servers registered with :meth:`add_resource_server`."""

    def query_token(self, token_string: str, token_type_hint: str | None) -> Token | None:
        return self.server.find_token(token_string, token_type_hint)  # type: ignore[no-any-return]

    def check_permission(self, token: Token, client: Client, request: Any) -> bool:
        return client.introspects

    def introspect_token(self, token: Token) -> dict[str, Any]:
        if token.access_revoked or token.expires_at <= time.time():
            return {"active": False}
        return {
            "active": True,
            "client_id": token.client_id,
            "token_type": "Bearer",
            "scope": token.scope,
            "sub": token.user if token.user is not None else token.client_id,
            "aud": token.audience,
            "iss": self.server.issuer,
            "exp": int(token.expires_at),
            "iat": int(token.issued_at),
        }


class _Revocation(RevocationEndpoint):  # type: ignore[misc]
    """RFC 7009, by the client the token was issued to: ``token_type_hint=access_token``
    revokes the access token alone, anything else the whole grant."""

    CLIENT_AUTH_METHODS: ClassVar[list[str]] = AUTH_METHODS

    def query_token(self, token_string: str, token_type_hint: str | None) -> Token | None:
        return self.server.find_token(token_string, token_type_hint)  # type: ignore[no-any-return]

    def revoke_token(self, token: Token, request: Any) -> None:
        token.access_revoked = True
        if request.form.get("token_type_hint") != "access_token":
            token.revoked = True


class _Issuer(IssuerParameter):  # type: ignore[misc]
    def __init__(self, server: LoopbackAuthorizationServer) -> None:
        self._server = server

    def get_issuer(self) -> str | None:
        return self._server.issuer if self._server.iss_in_redirect else None


class Guard:
    """The protected MCP endpoint at ``/mcp``: Protected Resource Metadata, bearer
    tokens of ``auth_server`` checked (audience ``resource``), ``required`` scopes for
    every POST and ``tool_scopes`` per tool, then ``app``."""

    def __init__(
        self,
        app: Any,
        auth_server: Callable[[], LoopbackAuthorizationServer],
        resource: Callable[[], str],
        *,
        required: list[str],
        tool_scopes: dict[str, list[str]] | None = None,
        scopes_supported: list[str] | None = None,
        prm_resource: Callable[[], str] | None = None,
    ) -> None:
        self.app = app
        self.auth_server = auth_server
        self.resource = resource
        self.required = required
        self.tool_scopes = tool_scopes or {}
        self.scopes_supported = scopes_supported
        self.prm_resource = prm_resource or resource
        self.challenges: list[tuple[int, str]] = []

    def _challenge(self, status: int, scopes: list[str], error: str | None = None) -> Response:
        base = self.resource().rsplit("/mcp", 1)[0]
        value = f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp", scope="{" ".join(scopes)}"'
        if error:
            value += f', error="{error}"'
        self.challenges.append((status, value))
        return Response(status_code=status, headers={"WWW-Authenticate": value})

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] == "/.well-known/oauth-protected-resource/mcp":
            doc: dict[str, Any] = {"resource": self.prm_resource(), "authorization_servers": [self.auth_server().issuer]}
            if self.scopes_supported is not None:
                doc["scopes_supported"] = self.scopes_supported
            await JSONResponse(doc)(scope, receive, send)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        refusal = self._check(Request(scope), body)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            message: dict[str, Any] = await receive()
            return message

        await self.app(scope, replay, send)

    def _check(self, request: Request, body: bytes) -> Response | None:
        auth = request.headers.get("authorization", "")
        token = self.auth_server().tokens.get(auth[7:]) if auth.lower().startswith("bearer ") else None
        if not auth:
            return self._challenge(401, self.required)
        if token is None or token.revoked or token.access_revoked or token.expires_at < time.time():
            return self._challenge(401, self.required, "invalid_token")
        if token.audience != self.resource():
            return self._challenge(401, self.required, "invalid_token")
        needed = list(self.required)
        if request.method == "POST":
            try:
                message = json.loads(body)
                if message.get("method") == "tools/call":
                    needed += [s for s in self.tool_scopes.get(message["params"]["name"], []) if s not in needed]
            except (ValueError, KeyError, TypeError, AttributeError):
                pass
        if not set(needed) <= set(token.scope.split()):
            return self._challenge(403, needed, "insufficient_scope")
        return None
