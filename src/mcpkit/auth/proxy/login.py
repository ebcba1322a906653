"""The OAuth proxy's login (docs/auth.md, "An OAuth proxy"): ``/authorize`` takes the MCP
client's authorization request, ``/consent`` the user's answer, ``/callback`` the
upstream provider's, and the client gets the proxy's own authorization code.

``/authorize`` checks the request in RFC 6749 §4.1.2.1's order: an unknown client or a
redirect URI it did not register is answered here (400, nothing sent to that URI); any
other fault goes back to the redirect URI — ``unsupported_response_type``,
``invalid_request`` (PKCE must be S256), ``invalid_target`` (RFC 8707: ``resource`` must
be this MCP server), ``invalid_scope``. A login is then kept under a random id, bound to
the browser by a cookie, and the user is asked (the consent page) unless they approved
this very client and redirect URI, for these scopes, before (``consent.py``). On approval the browser goes
upstream with the proxy's own client, PKCE and ``state`` (the login id); ``/callback``
takes the login (once), exchanges the upstream code, learns who the user is, and sends the
browser back to the MCP client with a code of the proxy's, its ``state`` and ``iss``
(RFC 9207).
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from typing import Any, Final
from urllib.parse import urlencode, urlsplit

from .consent import CONSENT_COOKIE, LOGIN_COOKIE, consent_page
from .http import ProxyRequest, Response, html_page, oauth_error, redirect
from .registration import registered_redirect_uri
from .settings import ProxySettings
from .store import RECORD_ID
from .tokens import digest
from .upstream import UpstreamError

__all__ = ["authorize", "consent", "callback", "s256", "web_origin"]

#: RFC 7636 §4.2: a code challenge (and a verifier) is 43 to 128 unreserved characters.
PKCE_VALUE: Final = re.compile(r"[A-Za-z0-9\-._~]{43,128}")
#: The errors of an upstream authorization response passed on to the client as they are.
_PASSED_ON: Final = {"access_denied", "temporarily_unavailable", "server_error"}
#: The longest ``state`` a login keeps (it is stored until the login ends).
MAX_STATE: Final = 1024


def s256(verifier: str) -> str:
    """The S256 code challenge of ``verifier`` (RFC 7636 §4.2)."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def _page(status: int, title: str, text: str) -> Response:
    import html

    return html_page(status, f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>"
                             f"<h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>")  # fmt: skip


def back(settings: ProxySettings, redirect_uri: str, state: str | None, **params: str) -> Response:
    """The browser sent back to the client's ``redirect_uri`` with ``params``, ``state``
    and ``iss``."""
    query = {**params, **({"state": state} if state is not None else {}), "iss": settings.issuer}
    sep = "&" if urlsplit(redirect_uri).query else "?"
    return redirect(f"{redirect_uri}{sep}{urlencode(query)}")


def _error(settings: ProxySettings, login: dict[str, Any], error: str, description: str) -> Response:
    return back(settings, login["redirect_uri"], login.get("state"), error=error, error_description=description)


_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def web_origin(url: str) -> str | None:
    """The RFC 6454 origin of ``url`` as a browser serialises it in ``Origin``: the scheme
    and host lower-cased, the port dropped when it is the scheme's default; None for one
    that has none (``null``, no host, a port that is not a number)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), parts.hostname
    if scheme not in _DEFAULT_PORTS or not host:
        return None
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}" + ("" if port is None or port == _DEFAULT_PORTS[scheme] else f":{port}")


def _login_cookie_name(login_id: str) -> str:
    return f"{LOGIN_COOKIE}_{digest(login_id)[:16]}"


async def authorize(settings: ProxySettings, request: ProxyRequest) -> Response:
    """``GET /authorize``: the module docs."""
    q = request.query
    client = await settings.store.get("client", q["client_id"]) if RECORD_ID.fullmatch(q.get("client_id", "")) else None
    if client is None:
        return oauth_error("invalid_request", "unknown client_id: register the client first")
    redirect_uri = q.get("redirect_uri") or (client["redirect_uris"][0] if len(client["redirect_uris"]) == 1 else "")
    registered = registered_redirect_uri(redirect_uri, client["redirect_uris"])
    if registered is None:
        return oauth_error("invalid_request", "the redirect_uri is not one this client registered")
    if len(q.get("state", "")) > MAX_STATE:  # not echoed back: answered here
        return oauth_error("invalid_request", f"state is longer than {MAX_STATE} characters")
    login: dict[str, Any] = {"client_id": client["client_id"], "redirect_uri": redirect_uri, "state": q.get("state")}
    if q.get("response_type") != "code":
        return _error(settings, login, "unsupported_response_type", "only response_type=code is supported")
    if q.get("code_challenge_method") != "S256" or not PKCE_VALUE.fullmatch(q.get("code_challenge", "")):
        return _error(settings, login, "invalid_request", "PKCE is required, with code_challenge_method=S256")
    if q.get("resource", settings.resource).rstrip("/") != settings.resource.rstrip("/"):
        return _error(settings, login, "invalid_target", f"this authorization server issues tokens for {settings.resource} only")
    asked = q.get("scope", "").split()  # none, or only spaces: the default scopes
    scopes = list(dict.fromkeys(asked)) if asked else list(settings.default_scopes)
    unknown = [s for s in scopes if s not in settings.scopes_supported]
    if unknown:
        return _error(settings, login, "invalid_scope", f"unknown scope: {' '.join(unknown)}")
    login_id, browser = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    login |= {
        "client_name": client.get("client_name") or client["client_id"],
        "code_challenge": q["code_challenge"],
        "scopes": scopes,
        "browser": digest(browser),
        "verifier": secrets.token_urlsafe(48),
        "nonce": secrets.token_urlsafe(16),
        "registered": registered,  # what a consent is of: a loopback port is the application's choice each time
        "approved": settings.consent.approved(request.cookies.get(CONSENT_COOKIE), client["client_id"], registered, scopes),
    }
    if not await settings.store.put("login", login_id, login, settings.login_ttl):
        return _error(settings, login, "temporarily_unavailable", "too many logins under way; try again later")
    cookie = f"{_login_cookie_name(login_id)}={browser}; Max-Age={settings.login_ttl}; {settings.consent.attributes}"
    if login["approved"]:
        return await _upstream(settings, login_id, login, [cookie])
    page = consent_page(
        action=settings.url("consent"), login=login_id, client_name=login["client_name"], client_id=client["client_id"],
        redirect_uri=redirect_uri, scopes=scopes, resource=settings.resource, provider=settings.upstream.provider.name,
    )  # fmt: skip
    return html_page(200, page, [cookie])


async def _upstream(settings: ProxySettings, login_id: str, login: dict[str, Any], cookies: list[str]) -> Response:
    try:
        url = await settings.upstream.authorization_url(
            redirect_uri=settings.url("callback"), state=login_id, code_challenge=s256(login["verifier"]), nonce=login["nonce"]
        )
    except UpstreamError as exc:
        await settings.store.delete("login", login_id)
        return _error(settings, login, "temporarily_unavailable", str(exc))
    return redirect(url, cookies)


def _same_browser(request: ProxyRequest, login_id: str, login: dict[str, Any]) -> bool:
    browser = request.cookies.get(_login_cookie_name(login_id))
    return browser is not None and secrets.compare_digest(digest(browser), login["browser"])


async def consent(settings: ProxySettings, request: ProxyRequest) -> Response:
    """``POST /consent``: the user's answer, from the page this browser was shown. A
    POST from another origin, for a login another browser began, or for a login that
    is over is refused (403, 400) and changes nothing."""
    origin = request.headers.get("origin")
    expected = web_origin(settings.issuer)  # the issuer as given: HTTP://Example.COM:443 is https://example.com
    if origin is not None and (expected is None or web_origin(origin) != expected):
        return _page(403, "Refused", "This approval did not come from this server's page.")
    form = request.form()
    login_id = form.get("login", "")
    login = await settings.store.get("login", login_id) if RECORD_ID.fullmatch(login_id) else None
    if login is None:
        return _page(400, "This sign-in is over", "Start again from the application.")
    if not _same_browser(request, login_id, login):
        return _page(403, "Refused", "This approval was not asked of this browser.")
    if form.get("decision") != "allow":
        await settings.store.delete("login", login_id)
        denied = _error(settings, login, "access_denied", "the user denied access")
        denied.headers.append(("set-cookie", _cleared(settings, login_id)))
        return denied
    login["approved"] = True
    if not await settings.store.put("login", login_id, login, settings.login_ttl):
        return _error(settings, login, "temporarily_unavailable", "too many logins under way; try again later")
    jar, cookie = settings.consent, request.cookies.get(CONSENT_COOKIE)
    approval = jar.with_approval(cookie, login["client_id"], login.get("registered", login["redirect_uri"]), login["scopes"])
    return await _upstream(settings, login_id, login, [approval])


async def callback(settings: ProxySettings, request: ProxyRequest) -> Response:
    """``GET /callback``: the upstream provider's answer, for a login of this browser
    that the user approved; taken once. The MCP client gets a code of the proxy's, or the
    error (``server_error`` when the provider failed)."""
    q = request.query
    login_id = q.get("state", "")
    login = await settings.store.get("login", login_id) if RECORD_ID.fullmatch(login_id) else None
    if login is not None and (not _same_browser(request, login_id, login) or not login.get("approved")):
        return _page(403, "Refused", "This sign-in was not begun in this browser.")  # and the login stays the user's
    login = await settings.store.take("login", login_id) if login is not None else None
    if login is None:
        return _page(400, "This sign-in is over", "Unknown or finished sign-in; start again from the application.")
    response = await _ended(settings, q, login)
    response.headers.append(("set-cookie", _cleared(settings, login_id)))  # the login is over: its cookie too
    return response


def _cleared(settings: ProxySettings, login_id: str) -> str:
    """The ``Set-Cookie`` value that removes the cookie of a login that is over."""
    return f"{_login_cookie_name(login_id)}=; Max-Age=0; {settings.consent.attributes}"


async def _ended(settings: ProxySettings, q: dict[str, str], login: dict[str, Any]) -> Response:
    """The client's answer to the provider's answer ``q``, for ``login`` (taken)."""
    upstream_issuer = settings.upstream.provider.issuer
    if "iss" in q and upstream_issuer is not None and q["iss"] != upstream_issuer:
        return _error(settings, login, "server_error", "the identity provider's answer names another issuer")
    if "error" in q or "code" not in q:
        error = q.get("error", "server_error")
        return _error(settings, login, error if error in _PASSED_ON else "access_denied", "the identity provider refused")
    try:
        tokens = await settings.upstream.exchange(
            code=q["code"], code_verifier=login["verifier"], redirect_uri=settings.url("callback")
        )
        identity = await settings.upstream.identity(tokens, nonce=login["nonce"])
    except UpstreamError as exc:
        return _error(settings, login, "server_error", str(exc))
    scopes = await settings.granted(identity, login["scopes"])
    code = secrets.token_urlsafe(32)
    record = {
        "client_id": login["client_id"],
        "redirect_uri": login["redirect_uri"],
        "code_challenge": login["code_challenge"],
        "scopes": scopes,
        "subject": identity.subject,
        "claims": identity.claims,
        "grant_id": secrets.token_urlsafe(16),
    }
    if not await settings.store.put("code", digest(code), record, settings.code_ttl):
        return _error(settings, login, "temporarily_unavailable", "too many logins under way; try again later")
    return back(settings, login["redirect_uri"], login.get("state"), code=code)
