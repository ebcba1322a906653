"""Protecting a Streamable HTTP server: the resource-server side of MCP authorization
(docs/auth.md; RFC 9728, RFC 6750, RFC 8707).

:class:`ResourceServer` is given to ``server.asgi_app(auth=...)`` (or
``server.run("http", auth=...)``). The app then serves the Protected Resource Metadata
at the well-known paths beside the MCP endpoint, and every MCP request must carry a
bearer token its verifier accepts, with the scopes the server requires — and, for a
``tools/call``, ``prompts/get`` or ``resources/read``, the scopes that feature requires
(``@server.tool(scopes=[...])``). Otherwise:

- no token, or one the verifier refuses: **401**, ``WWW-Authenticate: Bearer
  resource_metadata="…", scope="…"`` (with ``error="invalid_token"`` for a bad one);
  likewise a token whose ``exp`` is the verifier's ``leeway`` (30 s unless it names
  one) or more past, whichever verifier accepted it;
- a valid token without the scopes: **403**, ``error="insufficient_scope"`` and the
  scopes needed (the client may step up);
- the verifier cannot decide (JWKS or introspection endpoint down), or fails in a way
  nobody foresaw (it raises something other than :class:`InvalidToken` or
  :class:`VerifierUnavailable`, or returns something other than an ``AccessToken``):
  **503** with ``Retry-After`` — it fails closed. The cause goes to the log (the
  ``mcpkit.auth`` logger, with the token blanked out), never into the response.

With ``dpop=DPoPChecker()`` it also takes DPoP-bound tokens (RFC 9449): ``Authorization:
DPoP <token>`` with a ``DPoP`` proof of the key the token names (``cnf.jkt``); a bad or
missing proof is a **401** ``error="invalid_dpop_proof"`` under a ``DPoP`` challenge, a
bound token sent as ``Bearer`` a 401 ``invalid_token`` (``auth/dpop.py``).

The verified :class:`~mcpkit.auth.identity.AccessToken` is what ``ctx.identity`` returns.
"""

from __future__ import annotations

import hashlib
import logging
import math
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

import msgspec

from ..stores.errors import StoreUnavailable
from .dpop import DPoPChecker, InvalidProof, ReplayCacheFull
from .identity import AccessToken
from .verifiers import InvalidToken, TokenVerifier, VerifierUnavailable, check_expiry, leeway_of

__all__ = ["ResourceServer", "AuthRefusal", "AuthorizationEndpoints", "MAX_AUTHORIZATION_HEADER"]

log = logging.getLogger("mcpkit.auth")

_UNAVAILABLE = "Service Unavailable: cannot verify tokens now"

#: The longest ``Authorization`` header read; a longer one is refused (401) unread.
MAX_AUTHORIZATION_HEADER = 16 * 1024


#: The ``Retry-After`` of a 503 when the verifier does not say when to come back.
DEFAULT_RETRY_AFTER = 5


@dataclass(frozen=True)
class AuthRefusal(Exception):
    """Why a request was refused: its HTTP status, the ``WWW-Authenticate`` header (if
    any), a short text body, and for a 503 the seconds after which to retry."""

    status: int
    www_authenticate: str | None
    text: str
    retry_after: int = DEFAULT_RETRY_AFTER
    #: Further ``WWW-Authenticate`` challenges, each its own header (a ``DPoP`` one).
    also: tuple[str, ...] = ()

    def headers(self) -> list[tuple[bytes, bytes]]:
        out = [(b"www-authenticate", self.www_authenticate.encode())] if self.www_authenticate else []
        out += [(b"www-authenticate", challenge.encode()) for challenge in self.also]
        if self.status == 503:
            out.append((b"retry-after", str(self.retry_after).encode()))
        return out


def _retry_after(exc: VerifierUnavailable) -> int:
    """Whole seconds (1 to 3600) from the verifier's hint, else the default."""
    hint = getattr(exc, "retry_after", None)
    if isinstance(hint, (int, float)) and not isinstance(hint, bool) and math.isfinite(hint):
        return min(3600, max(1, math.ceil(hint)))
    return DEFAULT_RETRY_AFTER


def _cause(exc: BaseException, token: str) -> str:
    """The traceback of ``exc``, with every occurrence of ``token`` blanked out."""
    return "".join(traceback.format_exception(exc)).replace(token, "[the token]")


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@runtime_checkable
class AuthorizationEndpoints(Protocol):
    """Endpoints the app serves beside the MCP endpoint and its metadata, before any
    token is checked: an authorization server of this server's own (the OAuth proxy,
    ``mcpkit.auth.proxy``). ``handles(path)`` says which paths are its; it is called
    as an ASGI app for them."""

    def handles(self, path: str) -> bool: ...

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None: ...


@dataclass
class ResourceServer:
    """How a server is protected.

    ``resource`` is this MCP endpoint's canonical URL (e.g.
    ``"https://mcp.example.com/mcp"``): the audience tokens must name and what the
    metadata says. ``authorization_servers`` are the issuers clients should use.
    ``verifier`` checks tokens (:class:`~mcpkit.auth.verifiers.JWTVerifier`,
    :class:`~mcpkit.auth.verifiers.IntrospectionVerifier`,
    :class:`~mcpkit.auth.verifiers.FunctionVerifier`, or any object with ``async
    verify(token)``). ``required_scopes`` are needed for every request;
    ``scopes_supported`` (default: every scope named anywhere) is advertised.

    ``dpop``: a :class:`~mcpkit.auth.dpop.DPoPChecker` to take DPoP-bound tokens as well
    (advertised in the metadata, offered in a second ``WWW-Authenticate`` challenge);
    ``dpop_required``: take nothing else (Bearer tokens refused). ``endpoints``: an
    :class:`AuthorizationEndpoints` served beside the MCP endpoint (the OAuth proxy's
    ``resource_server()`` sets it). Raises ``ValueError`` for settings that cannot work.
    """

    resource: str
    authorization_servers: Sequence[str]
    verifier: TokenVerifier
    required_scopes: Sequence[str] = ()
    scopes_supported: Sequence[str] | None = None
    resource_name: str | None = None
    resource_documentation: str | None = None
    extra_metadata: dict[str, Any] = field(default_factory=dict)
    dpop: DPoPChecker | None = None
    dpop_required: bool = False
    endpoints: AuthorizationEndpoints | None = None

    def __post_init__(self) -> None:
        if self.dpop_required and self.dpop is None:
            raise ValueError("dpop_required needs dpop=DPoPChecker(...)")
        parts = urlsplit(self.resource)
        if parts.scheme not in ("https", "http") or not parts.netloc or parts.fragment:
            raise ValueError("resource must be an absolute http(s) URL without a fragment")
        if not self.authorization_servers:
            raise ValueError("name at least one authorization server")

    # --- metadata -------------------------------------------------------------------------

    @property
    def metadata_path(self) -> str:
        """Where the metadata is served: the well-known prefix, then the resource's path
        (RFC 9728 section 3.1)."""
        path = urlsplit(self.resource).path.rstrip("/")
        return "/.well-known/oauth-protected-resource" + path

    @property
    def metadata_url(self) -> str:
        """The metadata's absolute URL, as ``WWW-Authenticate`` names it."""
        parts = urlsplit(self.resource)
        return f"{parts.scheme}://{parts.netloc}{self.metadata_path}"

    def metadata_paths(self) -> tuple[str, ...]:
        """Every path the metadata answers at: the path-specific one and the root one."""
        return tuple(dict.fromkeys((self.metadata_path, "/.well-known/oauth-protected-resource")))

    def metadata(self, all_scopes: Iterable[str] = ()) -> dict[str, Any]:
        """The Protected Resource Metadata document."""
        scopes = self.scopes_supported
        if scopes is None:
            scopes = sorted(set(self.required_scopes) | set(all_scopes))
        doc: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(self.authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        if scopes:
            doc["scopes_supported"] = list(scopes)
        if self.resource_name:
            doc["resource_name"] = self.resource_name
        if self.resource_documentation:
            doc["resource_documentation"] = self.resource_documentation
        if self.dpop is not None:
            doc["dpop_signing_alg_values_supported"] = list(self.dpop.algorithms)
            doc["dpop_bound_access_tokens_required"] = self.dpop_required
        return {**doc, **self.extra_metadata}

    # --- checking requests ----------------------------------------------------------------

    def challenge(self, *, error: str | None = None, scopes: Iterable[str] = (), description: str | None = None) -> str:
        """A ``WWW-Authenticate: Bearer …`` value pointing at the metadata."""
        parts = [f"resource_metadata={_quoted(self.metadata_url)}"]
        scope = " ".join(dict.fromkeys(scopes))
        if scope:
            parts.append(f"scope={_quoted(scope)}")
        if error:
            parts.append(f"error={_quoted(error)}")
        if description:
            parts.append(f"error_description={_quoted(description)}")
        return "Bearer " + ", ".join(parts)

    def _dpop_challenge(self, error: str | None = None, description: str | None = None) -> tuple[str, ...]:
        """The ``DPoP`` challenge (RFC 9449 §7.1) when this server takes DPoP tokens."""
        if self.dpop is None:
            return ()
        parts = [f"algs={_quoted(' '.join(self.dpop.algorithms))}"]
        if error:
            parts.append(f"error={_quoted(error)}")
        if description:
            parts.append(f"error_description={_quoted(description)}")
        return ("DPoP " + ", ".join(parts),)

    def _refuse(
        self,
        status: int,
        text: str,
        *,
        error: str | None = None,
        description: str | None = None,
        scopes: Iterable[str] = (),
        dpop_error: bool = False,
    ) -> AuthRefusal:
        """A 401/403 with this server's challenges: the ``Bearer`` one (which points at
        the metadata, even when only DPoP tokens are taken), then the ``DPoP`` one;
        ``error`` is the DPoP challenge's when ``dpop_error``, else the Bearer one's."""
        if dpop_error:
            return AuthRefusal(status, self.challenge(scopes=scopes), text, also=self._dpop_challenge(error, description))
        bearer = self.challenge(error=error, scopes=scopes, description=description)
        return AuthRefusal(status, bearer, text, also=self._dpop_challenge())

    async def authenticate(
        self,
        authorization: str | None,
        *,
        check_scopes: bool = True,
        dpop_proofs: Sequence[str] = (),
        method: str = "POST",
        path: str | None = None,
    ) -> AccessToken:
        """The identity an ``Authorization`` header proves, and (unless
        ``check_scopes`` is false: the caller checks them once it knows the request)
        with the server's required scopes. For a ``DPoP`` token, ``dpop_proofs`` are the
        request's ``DPoP`` headers, ``method`` its method and ``path`` its path (the
        proof's ``htu`` is this server's public origin, from ``resource``, and that
        path). Raises :class:`AuthRefusal`: 401 without a token, for one the verifier
        refuses, or for one whose ``expires_at`` is the verifier's ``leeway``
        (:func:`~mcpkit.auth.verifiers.leeway_of`) or more past — checked here for every
        verifier alike — for a DPoP token without a valid proof of its key
        (``invalid_dpop_proof``), or a DPoP-bound token sent as Bearer; 403 for missing
        scopes; 503 when the verifier cannot decide (``Retry-After`` as its
        :class:`VerifierUnavailable` suggests) or raises anything else (logged), or when
        DPoP's replay cache is full. Cancellation while the verifier works abandons it."""
        required = list(self.required_scopes)
        if authorization is None:
            raise self._refuse(401, "Unauthorized: a bearer token is required", scopes=required)
        if len(authorization) > MAX_AUTHORIZATION_HEADER:
            raise self._refuse(401, "Unauthorized: header too long", error="invalid_request", scopes=required)
        scheme, _, token = authorization.strip().partition(" ")
        token, scheme = token.strip(), scheme.lower()
        takes = ("dpop",) if self.dpop_required else ("bearer", "dpop") if self.dpop is not None else ("bearer",)
        if scheme not in takes or not token or " " in token:
            usage = "Authorization: DPoP <token> with a DPoP proof" if self.dpop_required else "Authorization: Bearer <token>"
            raise self._refuse(401, f"Unauthorized: use {usage}", error="invalid_request", scopes=required)
        try:
            identity = await self.verifier.verify(token)
            if not isinstance(identity, AccessToken):
                raise TypeError(f"the verifier returned {type(identity).__name__}, not an AccessToken")
            check_expiry(identity, leeway_of(self.verifier))
        except InvalidToken as exc:
            log.debug("token refused: %s", exc)
            raise self._refuse(
                401, "Unauthorized: invalid token", error="invalid_token", scopes=required, description=str(exc)
            ) from None
        except VerifierUnavailable as exc:
            log.warning("cannot verify tokens: %s", exc)
            raise AuthRefusal(503, None, _UNAVAILABLE, _retry_after(exc)) from None
        except Exception as exc:  # a verifier's bug or an unforeseen failure: closed, like an outage
            log.error("the token verifier failed; the request is refused with 503: %s", _cause(exc, token))
            raise AuthRefusal(503, None, _UNAVAILABLE) from None
        if self.dpop is not None:
            await self._check_binding(identity, scheme, token, dpop_proofs, method, path, required)
        if identity.principal is None:
            identity = msgspec.structs.replace(identity, token_digest=hashlib.sha256(token.encode()).hexdigest()[:32])
        if check_scopes:
            self.check_scopes(identity, ())
        return identity

    async def _check_binding(
        self, identity: AccessToken, scheme: str, token: str, proofs: Sequence[str], method: str, path: str | None,
        required: list[str],
    ) -> None:  # fmt: skip
        """RFC 9449 §7: a bound token comes with a proof of its key, and only so."""
        assert self.dpop is not None
        cnf = identity.claims.get("cnf")
        jkt = cnf.get("jkt") if isinstance(cnf, dict) else None
        bound = jkt is not None
        if (scheme == "dpop") != bound:
            description = (
                "the token is DPoP-bound: send it with the DPoP scheme and a proof"
                if bound
                else "the token is not DPoP-bound: send it as a Bearer token"
            )
            raise self._refuse(
                401, "Unauthorized: invalid token", error="invalid_token", scopes=required, description=description
            )
        if not bound:
            return
        try:
            if len(proofs) != 1:
                raise InvalidProof("send exactly one DPoP proof" if proofs else "the request carries no DPoP proof")
            parts = urlsplit(self.resource)
            url = f"{parts.scheme}://{parts.netloc}{path if path is not None else parts.path}"
            await self.dpop.check(proofs[0], method=method, url=url, access_token=token, jkt=jkt)
        except InvalidProof as exc:
            log.debug("DPoP proof refused: %s", exc)
            raise self._refuse(
                401, "Unauthorized: invalid DPoP proof", error="invalid_dpop_proof", description=str(exc), dpop_error=True
            ) from None
        except (ReplayCacheFull, StoreUnavailable) as exc:
            log.warning("cannot check DPoP proofs now: %s", exc)
            raise AuthRefusal(503, None, _UNAVAILABLE, 1) from None

    def check_scopes(self, identity: AccessToken, required: Iterable[str]) -> None:
        """Raises :class:`AuthRefusal` (403 insufficient_scope, naming every scope the
        request needs) unless ``identity`` has each of ``required``."""
        needed = list(dict.fromkeys([*self.required_scopes, *required]))
        if not identity.has_scopes(needed):
            raise self._refuse(403, "Forbidden: insufficient scope", error="insufficient_scope", scopes=needed)
