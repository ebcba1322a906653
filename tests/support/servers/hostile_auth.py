"""A protected mcpkit server for the hostile authorization tests (tests/hostile/test_jwks_outage.py,
test_introspection_flood.py, test_principals.py, test_verifier_failures.py).

``python tests/support/servers/hostile_auth.py PORT CONFIG`` serves 127.0.0.1:PORT/mcp (and the
deprecated HTTP+SSE transport at /sse and /messages) behind a ``ResourceServer`` whose
verifier CONFIG (JSON) describes:

* ``{"verifier": "jwt", "url": JWKS_URL, "issuer": ISS, "options": {...}}``: a ``JWTVerifier``
  (the audience is this server's URL);
* ``{"verifier": "introspection", "url": INTROSPECTION_URL, "options": {...}}``: an
  ``IntrospectionVerifier`` (client ``rs``, secret ``s``);
* ``{"verifier": "raising"}``: a ``FunctionVerifier`` whose function raises a ``RuntimeError``
  naming a secret (``SECRET``) and the token; ``{"verifier": "wrong-type"}``: one that
  returns a list; ``{"verifier": "garbage"}``: a verifier of its own whose ``verify``
  returns a string.

Tools: ``whoami`` (the principal, the subject and the client of the caller, as JSON);
``hold`` (``task=True``: sleeps ``seconds``, then answers ``held by <subject>``);
``redeem(code)`` asks for a confirmation, then redeems ``code`` at most once per exchange.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from mcpkit import Context, Server, ToolError
from mcpkit.auth.server import ResourceServer
from mcpkit.auth.verifiers import FunctionVerifier, IntrospectionVerifier, JWTVerifier

SECRET = "password=hunter2 at /srv/secret/db.sqlite"

server = Server("hostile-auth", "1.0.0", task_poll_interval=0.05, state_key=b"a key every node shares, 32 b!")

_REDEEMED: set[str] = set()


@server.tool
def whoami(ctx: Context) -> str:
    """Who the resource server says is calling."""
    who = ctx.identity
    assert who is not None
    return json.dumps({"principal": who.principal, "subject": who.subject, "client_id": who.client_id})


@server.tool(task=True)
async def hold(ctx: Context, seconds: float = 0.0) -> str:
    """Sleep, then say for whom."""
    import asyncio

    await asyncio.sleep(seconds)
    assert ctx.identity is not None
    return f"held by {ctx.identity.subject or ctx.identity.client_id}"


@server.tool
async def redeem(ctx: Context, code: str) -> str:
    """Redeem ``code`` once the user confirms: at most once per exchange."""
    answer = await ctx.elicit(f"Redeem {code}?", {"type": "object", "properties": {}}, key="confirm")
    if answer.action != "accept":
        return "not redeemed"
    if ctx.exchange_id in _REDEEMED:
        raise ToolError("this confirmation was used already")
    _REDEEMED.add(ctx.exchange_id)
    return f"redeemed {code}"


class _Garbage:
    async def verify(self, token: str) -> Any:
        return "not an identity"


def _verifier(config: dict[str, Any], url: str) -> Any:
    kind = config["verifier"]
    options = config.get("options", {})
    if kind == "jwt":
        return JWTVerifier(config["url"], issuer=config["issuer"], audience=url, **options)
    if kind == "introspection":
        return IntrospectionVerifier(config["url"], client_id="rs", client_secret="s", **options)
    if kind == "raising":

        def explode(token: str) -> None:
            raise RuntimeError(f"the user database is down ({SECRET}) while checking {token}")

        return FunctionVerifier(explode)
    if kind == "wrong-type":
        return FunctionVerifier(lambda token: ["not", "an", "identity"])  # type: ignore[arg-type,return-value]
    if kind == "garbage":
        return _Garbage()
    raise SystemExit(f"unknown verifier {kind!r}")


def main(port: int, config: dict[str, Any]) -> None:
    url = f"http://127.0.0.1:{port}/mcp"
    auth = ResourceServer(url, [config.get("issuer", "https://as.example.test")], _verifier(config, url))
    server.run("http", host="127.0.0.1", port=port, auth=auth, sse_transport=True, log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]), json.loads(sys.argv[2]))
