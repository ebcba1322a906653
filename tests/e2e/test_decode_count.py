"""How many times the server decodes the bytes of one request's params, end to end.

``tests/support/servers/decode_counting.py`` counts every decode of a buffer holding a marker
that only the request's arguments carry, and who asked for it. The engine reads the
message (its params as raw bytes: skipped, not decoded), then the request's head reads
what every layer needs: for ``tools/call`` (and ``resources/read``) that is all, its
typed params are the head's; another method's params are decoded once more, by the
dispatcher, as their type says. Whatever the transport and era, and with authorization,
tracing and an input round. Before the head a ``tools/call`` was decoded 4 to 8 times
(docs/performance.md): a layer that starts decoding the params again fails here.

``PYTHONPATH=tests python tests/e2e/test_decode_count.py [PYTHON]`` prints the counts for the tree that
``PYTHON`` imports (another checkout's, say).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import httpx

from support import wire
from support.eras import LEGACY
from support.paths import SERVERS
from support.ports import free_port
from support.processes import listening

MARKER = "decode-count-marker"
META = {
    **wire.META,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "counter", "version": "1"},
}
#: Who decodes a tools/call's params now, and how often: the engine's envelope and the head.
ONCE_EACH = {"mcpkit.protocol.engine:receive": 1, "mcpkit.protocol.head:read_head": 1}
#: A prompts/get's: its typed params too.
WITH_TYPED = {**ONCE_EACH, "mcpkit.server.dispatch:_decode": 1}
SCRIPT = str(SERVERS / "decode_counting.py")


class _Stdio:
    def __init__(self, python: str) -> None:
        self.proc = subprocess.Popen([python, SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdout is not None
        self.send(message)
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        assert answer.get("id") == message["id"], answer
        return answer

    def close(self) -> None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.proc.stdout.close()


def _text(answer: dict[str, Any]) -> str:
    text: str = answer["result"]["content"][0]["text"]
    return text


def _decodes(call: Any, meta: dict[str, Any] | None) -> dict[str, int]:
    params: dict[str, Any] = {"name": "decodes", "arguments": {}}
    if meta is not None:
        params["_meta"] = meta
    counts: dict[str, int] = json.loads(_text(call("tools/call", params)))
    return counts


def stdio_counts(python: str) -> dict[str, dict[str, int]]:
    """The decodes of a tools/call over stdio, in each era."""
    out: dict[str, dict[str, int]] = {}
    server = _Stdio(python)
    try:

        def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
            return server.request(wire.request(method, params))

        answer = call("tools/call", {"name": "echo", "arguments": {"text": MARKER}, "_meta": META})
        assert _text(answer) == MARKER, answer
        out["stdio modern tools/call"] = _decodes(call, META)
        answer = call("prompts/get", {"name": "greet", "arguments": {"who": MARKER}, "_meta": META})
        assert answer["result"]["messages"][0]["content"]["text"] == f"Hello, {MARKER}!", answer
        out["stdio modern prompts/get"] = _decodes(call, META)
        server.request(wire.initialize(LEGACY))
        server.send(wire.INITIALIZED)
        answer = call("tools/call", {"name": "echo", "arguments": {"text": MARKER}})
        assert _text(answer) == MARKER, answer
        out["stdio legacy tools/call"] = _decodes(call, None)
    finally:
        server.close()
    return out


def http_counts(python: str) -> dict[str, dict[str, int]]:
    """The decodes over HTTP, with authorization: a modern tools/call with one input
    round (two POSTs), and a legacy one in a session."""
    out: dict[str, dict[str, int]] = {}
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    auth = {"authorization": "Bearer t"}
    with listening([python, SCRIPT, "--http", str(port)], port, stderr=subprocess.DEVNULL), httpx.Client(timeout=10) as http:

        def modern(method: str, params: dict[str, Any]) -> dict[str, Any]:
            meta = params.pop("_meta")
            body, headers = wire.modern(method, params, meta=meta)
            resp = http.post(url, json=body, headers={**headers, **auth})
            assert resp.status_code == 200, resp.text
            answer: dict[str, Any] = resp.json()
            return answer

        first = modern("tools/call", {"name": "ask", "arguments": {"text": MARKER}, "_meta": META})
        result = first["result"]
        assert result["resultType"] == "input_required", first
        assert "who" in result["inputRequests"], first
        again = {
            "name": "ask",
            "arguments": {"text": MARKER},
            "_meta": META,
            "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}}},
            "requestState": result["requestState"],
        }
        assert _text(modern("tools/call", again)) == f"{MARKER} Ada"
        out["HTTP modern tools/call, auth, one input round (2 POSTs)"] = _decodes(modern, META)

        session = wire.open_session(http, url, headers=auth)

        def legacy(method: str, params: dict[str, Any]) -> dict[str, Any]:
            resp = http.post(url, json=wire.request(method, params), headers=session)
            assert resp.status_code == 200, resp.text
            answer: dict[str, Any] = resp.json()
            return answer

        assert _text(legacy("tools/call", {"name": "echo", "arguments": {"text": MARKER}})) == MARKER
        out["HTTP legacy tools/call, auth"] = _decodes(legacy, None)
    return out


def test_stdio_request_params_are_decoded_once_for_the_head() -> None:
    counts = stdio_counts(sys.executable)
    assert counts == {
        "stdio modern tools/call": ONCE_EACH,
        "stdio modern prompts/get": WITH_TYPED,
        "stdio legacy tools/call": ONCE_EACH,
    }


def test_http_request_params_are_decoded_once_for_the_head() -> None:
    """Through the whole HTTP app: era routing, the mirrored-header check, the scope
    check, tracing, the dispatcher and the input round's answers all read one head."""
    counts = http_counts(sys.executable)
    twice_each = {caller: 2 * n for caller, n in ONCE_EACH.items()}
    assert counts == {
        "HTTP modern tools/call, auth, one input round (2 POSTs)": twice_each,
        "HTTP legacy tools/call, auth": ONCE_EACH,
    }


if __name__ == "__main__":
    interpreter = sys.argv[1] if len(sys.argv) > 1 else sys.executable
    for kind, breakdown in {**stdio_counts(interpreter), **http_counts(interpreter)}.items():
        print(f"{kind}: {sum(breakdown.values())} decodes: {json.dumps(breakdown)}")
