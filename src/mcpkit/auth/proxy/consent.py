"""The user's consent to an MCP client (docs/auth.md, "The confused deputy"): the page
that asks it, and :class:`ConsentJar`, the signed cookie that remembers it.

The proxy is one client of the upstream provider, so once a user has let the proxy in
upstream, the provider may not ask again — whichever MCP client started the login. Before
sending the browser upstream, the proxy therefore asks the user itself, naming the client
(its registered name) and where the code will go (its redirect URI), and remembers the
approval for that *pair* and the scopes approved only, in a cookie signed with the proxy's
secret: another client, the same client with another redirect URI, or asking for a scope
the user did not approve, is asked again. The approval form is bound
to the browser that was shown it (a random value in a cookie of its own, compared on the
POST), so a page elsewhere cannot submit it for the user.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import json
import time
from typing import Final

__all__ = ["ConsentJar", "consent_page", "CONSENT_COOKIE", "LOGIN_COOKIE"]

#: The cookie that remembers approvals; the one that binds a login to its browser.
CONSENT_COOKIE: Final = "mcpkit_consent"
LOGIN_COOKIE: Final = "mcpkit_login"
#: At most this many approvals are remembered (the newest).
MAX_APPROVALS: Final = 20


def _pair(client_id: str, redirect_uri: str) -> str:
    return hashlib.sha256(json.dumps([client_id, redirect_uri]).encode()).hexdigest()[:32]


class ConsentJar:
    """Approvals of (client, redirect URI) pairs in a cookie signed (HMAC-SHA256) with
    ``secret``, each for ``ttl`` seconds. ``secure`` marks the cookies ``Secure`` (the
    proxy is served over HTTPS); ``path`` is where the browser sends them."""

    def __init__(self, secret: bytes, *, ttl: float, secure: bool, path: str = "/") -> None:
        self._secret = secret
        self._ttl = ttl
        #: The attributes every cookie of the proxy carries.
        self.attributes = f"Path={path}; HttpOnly; SameSite=Lax" + ("; Secure" if secure else "")

    def _sign(self, payload: bytes) -> str:
        return base64.urlsafe_b64encode(hmac.new(self._secret, payload, hashlib.sha256).digest()).rstrip(b"=").decode()

    def approvals(self, cookie: str | None) -> dict[str, tuple[float, list[str]]]:
        """The live approvals a cookie carries (pair -> until, scopes); none for a cookie
        whose signature does not hold."""
        if not cookie or "." not in cookie:
            return {}
        body, _, signature = cookie.rpartition(".")
        try:
            payload = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        except ValueError:
            return {}
        if not hmac.compare_digest(self._sign(payload), signature):
            return {}
        try:
            entries = json.loads(payload)
        except ValueError:
            return {}
        now = time.time()
        if not isinstance(entries, dict):
            return {}
        return {
            pair: (float(entry[0]), [str(s) for s in entry[1]])
            for pair, entry in entries.items()
            if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], (int, float)) and entry[0] > now
            and isinstance(entry[1], list)
        }  # fmt: skip

    def approved(self, cookie: str | None, client_id: str, redirect_uri: str, scopes: list[str]) -> bool:
        """Whether the cookie carries a live approval of exactly this pair, for every one
        of ``scopes``."""
        entry = self.approvals(cookie).get(_pair(client_id, redirect_uri))
        return entry is not None and set(scopes) <= set(entry[1])

    def with_approval(self, cookie: str | None, client_id: str, redirect_uri: str, scopes: list[str]) -> str:
        """The ``Set-Cookie`` value remembering this pair too, for ``scopes`` and those it
        was approved for before (the oldest approval dropped past :data:`MAX_APPROVALS`)."""
        entries = self.approvals(cookie)
        before = entries.pop(_pair(client_id, redirect_uri), (0.0, []))[1]
        entries[_pair(client_id, redirect_uri)] = (time.time() + self._ttl, sorted({*before, *scopes}))
        kept = dict(sorted(entries.items(), key=lambda item: item[1][0])[-MAX_APPROVALS:])
        payload = json.dumps({pair: [until, granted] for pair, (until, granted) in kept.items()}, separators=(",", ":"))
        value = base64.urlsafe_b64encode(payload.encode()).rstrip(b"=").decode() + "." + self._sign(payload.encode())
        return f"{CONSENT_COOKIE}={value}; Max-Age={int(self._ttl)}; {self.attributes}"


def consent_page(*, action: str, login: str, client_name: str, client_id: str, redirect_uri: str, scopes: list[str],
                 resource: str, provider: str) -> str:  # fmt: skip
    """The page asking the user to let ``client_name`` in (every value escaped)."""
    e = html.escape
    scope_items = "".join(f"<li><code>{e(s)}</code></li>" for s in scopes) or "<li>(no particular scope)</li>"
    return (
        "<!doctype html><html lang=en><meta charset=utf-8><title>Allow access?</title>"
        "<style>body{font-family:sans-serif;max-width:36em;margin:3em auto}code{word-break:break-all}</style>"
        f"<h1>Allow <em>{e(client_name)}</em> to use <code>{e(resource)}</code>?</h1>"
        f"<p>The application <strong>{e(client_name)}</strong> (client <code>{e(client_id)}</code>) asks to act for you. "
        f"You will sign in with {e(provider)} next, and the application will get access at "
        f"<code>{e(redirect_uri)}</code>.</p>"
        f"<p>It asks for:</p><ul>{scope_items}</ul>"
        "<p>Only allow applications you started yourself.</p>"
        f'<form method=post action="{e(action)}">'
        f'<input type=hidden name=login value="{e(login)}">'
        "<button type=submit name=decision value=allow>Allow</button> "
        "<button type=submit name=decision value=deny>Deny</button>"
        "</form></html>"
    )
