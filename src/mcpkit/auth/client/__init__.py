"""The client side of MCP authorization (OAuth 2.1, docs/auth.md "Connecting a client").

:class:`~mcpkit.auth.client.flow.OAuthClientAuth` is an ``httpx.Auth`` given to
``HttpTransport(url, auth=...)``: on a 401 it discovers the server's authorization
server (``discovery.py``), registers the client if it must (``registration.py``), gets a
token with the authorization code + PKCE flow through a redirect handler
(``authorize.py``, ``loopback.py``) or with ``client_credentials`` (``grants.py``),
keeps it in a :class:`~mcpkit.auth.client.storage.TokenStorage`, refreshes it, and asks
for more scopes on a 403 ``insufficient_scope`` (step-up), a bounded number of times.
``flow.py`` is the HTTP side (headers, retries, one operation at a time);
``acquire.py`` the OAuth side (what to do after a 401 or a 403); ``dpop.py`` binds
tokens to a key when the authorization server offers DPoP; ``targets.py`` decides which
hosts a URL the MCP server names may lead the client to.

Nothing here is imported by ``import mcpkit``; httpx loads with ``flow.py`` and PyJWT
only when a ``private_key_jwt`` assertion is signed (``client_auth.py``).
"""
