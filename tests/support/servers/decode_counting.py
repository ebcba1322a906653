"""A server that counts how often the bytes of a request's params are decoded, and where.

Before mcpkit is imported, ``msgspec.json.Decoder`` and ``msgspec.json.decode`` are
replaced by wrappers that note every decode of a buffer holding :data:`MARKER` (a string
the test puts in a request's arguments), with the function that asked for it. Every
decoder mcpkit has is made through them, at import or later, so a layer that starts
decoding the params again is counted too. The ``decodes`` tool returns the counts noted
since it was last called, by caller (``module:function``), as JSON text, and starts over.

``python tests/support/servers/decode_counting.py`` serves stdio (both eras); ``... --http PORT``
serves 127.0.0.1:PORT/mcp with authorization (token ``t``, scopes ``mcp tools``), so the
scope check runs; tracing is on (a no-op tracer), so the server span runs. Used by
tests/e2e/test_decode_count.py; run with another tree's interpreter, it shows that tree's
counts (docs/performance.md quotes both).
"""

from __future__ import annotations

import collections
import json
import sys
import threading
from typing import Any

import msgspec
import msgspec.json

MARKER = b"decode-count-marker"
_lock = threading.Lock()
_counts: collections.Counter[str] = collections.Counter()
_RealDecoder = msgspec.json.Decoder
_real_decode = msgspec.json.decode


def _note(buf: Any) -> None:
    data = buf.encode() if isinstance(buf, str) else bytes(buf)
    if MARKER in data:
        caller = sys._getframe(2)
        with _lock:
            _counts[f"{caller.f_globals.get('__name__')}:{caller.f_code.co_name}"] += 1


class _CountingDecoder:
    """A ``msgspec.json.Decoder`` that notes what it decodes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._decoder = _RealDecoder(*args, **kwargs)

    def decode(self, buf: Any) -> Any:
        _note(buf)
        return self._decoder.decode(buf)


def _counting_decode(buf: Any, *args: Any, **kwargs: Any) -> Any:
    _note(buf)
    return _real_decode(buf, *args, **kwargs)


msgspec.json.Decoder = _CountingDecoder  # type: ignore[misc,assignment]
msgspec.json.decode = _counting_decode

from mcpkit import Context, Server  # noqa: E402  (after the decoders are replaced)

server = Server("decode-counting", "1.0.0", state_key=b"a key for the counting server, 32b", tracing=True)


@server.tool(scopes=["tools"])
async def ask(text: str, ctx: Context) -> str:
    """Asks the client one question (one input round in the modern era)."""
    answer = await ctx.elicit("Who?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="who")
    return f"{text} {(answer.content or {}).get('name')}"


@server.tool(scopes=["tools"])
def echo(text: str) -> str:
    """The text, unchanged."""
    return text


@server.prompt
def greet(who: str) -> str:
    """A greeting (its arguments are decoded as a prompt's: strings)."""
    return f"Hello, {who}!"


@server.tool
def decodes() -> str:
    """The decodes noted since the last call, by caller; then starts over."""
    with _lock:
        out = dict(_counts)
        _counts.clear()
    return json.dumps(out, sort_keys=True)


def _auth(port: int) -> Any:
    from mcpkit.auth.server import ResourceServer
    from mcpkit.auth.verifiers import FunctionVerifier

    tokens = {"t": {"active": True, "sub": "alice", "scope": "mcp tools"}}
    verifier = FunctionVerifier(tokens.get)
    return ResourceServer(f"http://127.0.0.1:{port}/mcp", ["https://as.example"], verifier, required_scopes=["mcp"])


if __name__ == "__main__":
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        server.run("http", host="127.0.0.1", port=port, log_level="warning", auth=_auth(port), json_response=True)
    else:
        server.run()
