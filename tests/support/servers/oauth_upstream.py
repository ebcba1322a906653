"""An identity provider for the OAuth proxy's tests, three ways: authlib's authorization
server (``oauth_as.py``) behind the paths and documents of a real provider.

- ``like="github"``: no discovery, no registration, opaque access tokens, the user from
  ``GET /api/user`` (``id``, ``login``, ``name``, ``email``), GitHub's endpoint paths
  (``/login/oauth/authorize``, ``/login/oauth/access_token``);
- ``like="google"``: OpenID Connect discovery at the root, no registration, an ID token
  (ES256, ``nonce`` echoed) beside each access token when ``openid`` was granted;
- ``like="keycloak"``: the same under ``/realms/test`` (the issuer), with dynamic client
  registration advertised and served.

The user who signs in is ``alice`` unless the "browser" names another in ``X-Test-User``.
"""

from __future__ import annotations

import json
import time
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from joserfc import jwt as jose_jwt
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .oauth_as import USER, Client, LoopbackAuthorizationServer, OAuth2Error, User, _JsonRequest, _Request

Like = Literal["github", "google", "keycloak"]

PEOPLE = {
    "alice": {"id": 4242, "login": "alice", "name": "Alice Liddell", "email": "alice@example.com"},
    "bob": {"id": 5151, "login": "bob", "name": "Bob", "email": "bob@example.com"},
}


class UpstreamIdP(LoopbackAuthorizationServer):
    """The provider at ``base`` (its origin), shaped ``like`` one of three."""

    def __init__(self, base: str, like: Like) -> None:
        issuer = f"{base}/realms/test" if like == "keycloak" else base
        super().__init__(issuer, scopes=["openid", "email", "profile", "read:user", "user:email"])
        self.base = base
        self.like = like
        self.nonces: dict[str, str] = {}  # authorization code -> the nonce of its request
        self.iss_in_redirect = like != "github"
        #: ID tokens carry another nonce than the request's (a replayed ID token); like GitHub,
        #: the user API refuses the token
        self.bad_identity = False

    def add_client(self, client_id: str, secret: str, redirect_uri: str) -> None:
        """Pre-register a confidential client (the proxy's), as a provider's console does."""
        self.clients[client_id] = Client(client_id, "client_secret_post", secret, [redirect_uri])

    @property
    def prefix(self) -> str:
        return "/realms/test/protocol/openid-connect" if self.like == "keycloak" else ""

    def oidc_metadata(self) -> dict[str, Any]:
        url = self.base + self.prefix
        doc = {
            "issuer": self.issuer,
            "authorization_endpoint": f"{url}/auth",
            "token_endpoint": f"{url}/token",
            "userinfo_endpoint": f"{url}/userinfo",
            "jwks_uri": f"{url}/certs",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": self.scopes_supported,
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic", "none"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
        }
        if self.like == "keycloak":
            doc["registration_endpoint"] = f"{url}/registrations"
        return doc

    def id_token(self, user: str, client_id: str, nonce: str | None) -> str:
        now = int(time.time())
        person = PEOPLE.get(user, {"email": f"{user}@example.com", "name": user})
        claims = {"iss": self.issuer, "sub": user, "aud": client_id, "iat": now, "exp": now + 300,
                  "email": person["email"], "email_verified": True, "name": person["name"]}  # fmt: skip
        if nonce is not None:
            claims["nonce"] = nonce
        return jose_jwt.encode({"alg": "ES256", "kid": "as-1"}, claims, self.signing_key)

    async def _adapt(self, request: Request, endpoint: str) -> _Request:
        form = {k: str(v) for k, v in (await request.form()).items()} if request.method == "POST" else {}
        query = dict(request.query_params)
        self.log.append((endpoint, {**query, **form}))
        return _Request(request.method, str(request.url), request.headers, query, form)

    async def _authorize(self, request: Request) -> Response:
        req = await self._adapt(request, "authorize")
        try:
            grant = self.get_consent_grant(req, end_user=USER)
        except OAuth2Error as error:
            return JSONResponse({"error": error.error}, status_code=400)
        user = None if self.deny_consent else User(request.headers.get("x-test-user", USER))
        response: Response = self.create_authorization_response(req, grant_user=user, grant=grant)
        code = parse_qs(urlsplit(response.headers.get("location", "")).query).get("code")
        if code and "nonce" in request.query_params:
            self.nonces[code[0]] = request.query_params["nonce"]
        return response

    async def _token(self, request: Request) -> Response:
        req = await self._adapt(request, "token")
        response: Response = self.create_token_response(req)
        if self.like == "github" or response.status_code != 200:
            return response
        body = json.loads(bytes(response.body))
        record = self.tokens.get(body.get("access_token", ""))
        if record is not None and record.user and "openid" in record.scope.split():
            nonce = self.nonces.pop(req.form.get("code", ""), None)
            nonce = "another login's nonce" if self.bad_identity else nonce
            body["id_token"] = self.id_token(record.user, record.client_id, nonce)
        return JSONResponse(body, headers={"cache-control": "no-store"})

    async def _user(self, request: Request) -> Response:
        self.log.append(("user", {}))
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        record = self.tokens.get(value) if scheme.lower() in ("bearer", "token") else None
        if self.bad_identity or record is None or record.revoked or record.user is None or record.expires_at < time.time():
            return JSONResponse({"message": "Bad credentials"}, status_code=401)
        if self.like == "github":
            return JSONResponse(PEOPLE.get(record.user, {"id": 1, "login": record.user}))
        return JSONResponse({"sub": record.user, "email": f"{record.user}@example.com"})

    async def _register(self, request: Request) -> Response:
        body = await request.json()
        self.log.append(("register", body))
        req = _JsonRequest("POST", str(request.url), request.headers, body)
        return self.create_endpoint_response("client_registration", req)  # type: ignore[no-any-return]

    async def _certs(self, request: Request) -> Response:
        self.log.append(("jwks", {}))
        return JSONResponse(self.jwks())

    async def _discovery(self, request: Request) -> Response:
        self.log.append(("discovery", {}))
        return JSONResponse(self.oidc_metadata())

    def asgi(self) -> Starlette:
        if self.like == "github":
            routes = [
                Route("/login/oauth/authorize", self._authorize),
                Route("/login/oauth/access_token", self._token, methods=["POST"]),
                Route("/api/user", self._user),
            ]
        else:
            realm = "/realms/test" if self.like == "keycloak" else ""
            routes = [
                Route(f"{realm}/.well-known/openid-configuration", self._discovery),
                Route(f"{self.prefix}/auth", self._authorize),
                Route(f"{self.prefix}/token", self._token, methods=["POST"]),
                Route(f"{self.prefix}/userinfo", self._user),
                Route(f"{self.prefix}/certs", self._certs),
            ]
            if self.like == "keycloak":
                routes.append(Route(f"{self.prefix}/registrations", self._register, methods=["POST"]))
        return Starlette(routes=routes)
