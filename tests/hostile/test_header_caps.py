"""The caps on a request's head under ``run_uvicorn``, on both of uvicorn's parsers, at the
boundary (issue 24, finding 11; docs/limits.md, "HTTP connections").

A request head — request line, header lines, the blank line — may be ``max_header_bytes``
bytes (16 KiB) and carry ``max_headers`` header lines (100); one byte or one line more is
refused with 400 and the connection closed, whether it comes in one write or dribbled in
many. Before: 17 KB, 64 KB and ~100 KB heads in one write got 200 (only ~200 KB got 400),
and 3,000 small headers were accepted, on either parser.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from support.eras import MODERN
from support.ports import free_port
from support.processes import listening, server_command
from support.wire import META

pytestmark = pytest.mark.timeout(120)

PARSERS = pytest.mark.parametrize("parser", ["httptools", "h11"])
BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}).encode()
#: Every head below has these header lines, then padding.
BASE = [
    b"Host: 127.0.0.1",
    b"Content-Type: application/json",
    b"Accept: application/json, text/event-stream",
    b"MCP-Protocol-Version: " + MODERN.encode(),
    b"Mcp-Method: tools/list",
    b"Content-Length: " + str(len(BODY)).encode(),
    b"Connection: close",
]
REQUEST_LINE = b"POST /mcp HTTP/1.1"


def head_of(size: int | None = None, lines: int | None = None) -> bytes:
    """A head of exactly ``size`` bytes (one padding header makes it up), or with exactly
    ``lines`` header lines (small padding headers make them up)."""
    if lines is not None:
        pads = [b"X-%d: v" % i for i in range(lines - len(BASE))]
        return b"\r\n".join([REQUEST_LINE, *BASE, *pads]) + b"\r\n\r\n"
    assert size is not None
    bare = b"\r\n".join([REQUEST_LINE, *BASE, b"X-Pad: "]) + b"\r\n\r\n"
    head = b"\r\n".join([REQUEST_LINE, *BASE, b"X-Pad: " + b"a" * (size - len(bare))]) + b"\r\n\r\n"
    assert len(head) == size
    return head


def status_of(port: int, request: bytes, pieces: int = 1) -> str:
    """Send ``request`` in ``pieces`` writes; the status line answered (or "closed")."""
    with socket.create_connection(("127.0.0.1", port), 10) as sock:
        sock.settimeout(20)
        step = -(-len(request) // pieces)
        with contextlib.suppress(OSError):  # the server may close before all of it is sent
            for at in range(0, len(request), step):
                sock.sendall(request[at : at + step])
                if pieces > 1:
                    time.sleep(0.001)  # the pieces arrive as separate reads, as the attack sends them
        answer = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                answer += chunk
    return answer.split(b"\r\n", 1)[0].decode(errors="replace") or "closed"


@contextlib.contextmanager
def guarded(parser: str, *caps: int) -> Iterator[int]:
    port = free_port()
    command = server_command("hostile_edge", "guarded", str(port), parser, *map(str, caps))
    with listening(command, port, stderr=subprocess.DEVNULL):
        yield port


@PARSERS
def test_the_default_caps_hold_at_the_boundary(parser: str) -> None:
    ok, refused = "HTTP/1.1 200 OK", "HTTP/1.1 400 Bad Request"
    with guarded(parser) as port:
        cases = {
            "16 KiB, one write": (status_of(port, head_of(16384) + BODY), ok),
            "16 KiB + 1, one write": (status_of(port, head_of(16385) + BODY), refused),
            "16 KiB, 64 writes": (status_of(port, head_of(16384) + BODY, 64), ok),
            "16 KiB + 1, 64 writes": (status_of(port, head_of(16385) + BODY, 64), refused),
            "17 KB": (status_of(port, head_of(17_000) + BODY), refused),
            "64 KB": (status_of(port, head_of(64_000) + BODY), refused),
            "100 KB": (status_of(port, head_of(100_000) + BODY), refused),
            "100 headers": (status_of(port, head_of(lines=100) + BODY), ok),
            "101 headers": (status_of(port, head_of(lines=101) + BODY), refused),
            "3,000 headers": (status_of(port, head_of(lines=3000) + BODY), refused),
        }
        assert status_of(port, head_of(1000) + BODY) == ok  # refusals left the server serving
    assert {name: got for name, (got, _) in cases.items()} == {name: want for name, (_, want) in cases.items()}


@PARSERS
def test_configured_caps_hold_at_the_boundary(parser: str) -> None:
    with guarded(parser, 4096, 12) as port:
        got = [
            status_of(port, head_of(4096) + BODY),
            status_of(port, head_of(4097) + BODY),
            status_of(port, head_of(4097) + BODY, 16),
            status_of(port, head_of(lines=12) + BODY),
            status_of(port, head_of(lines=13) + BODY),
        ]
    assert got == ["HTTP/1.1 200 OK", *["HTTP/1.1 400 Bad Request"] * 2, "HTTP/1.1 200 OK", "HTTP/1.1 400 Bad Request"]


@PARSERS
def test_a_refusal_says_which_cap(parser: str) -> None:
    with guarded(parser) as port:
        for request, says in [(head_of(20_000), b"exceed 16384 bytes"), (head_of(lines=150), b"more than 100 header fields")]:
            with socket.create_connection(("127.0.0.1", port), 10) as sock:
                sock.settimeout(20)
                sock.sendall(request + BODY)
                answer = b""
                with contextlib.suppress(OSError):
                    while chunk := sock.recv(65536):
                        answer += chunk
            assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
            assert b"connection: close" in answer.lower(), answer[:200]
            assert says in answer, answer


@PARSERS
def test_pipelined_heads_are_counted_each(parser: str) -> None:
    """Two requests in one write, each head within the cap: both are served; then one
    whose second head is over the cap: the first is served, the second refused."""
    keep = head_of(16384).replace(b"Connection: close", b"Connection: keepx")  # same size, kept alive
    with guarded(parser) as port:
        with socket.create_connection(("127.0.0.1", port), 10) as sock:
            sock.settimeout(20)
            sock.sendall(keep + BODY + head_of(16384) + BODY)
            both = b""
            with contextlib.suppress(OSError):
                while chunk := sock.recv(65536):
                    both += chunk
        with socket.create_connection(("127.0.0.1", port), 10) as sock:
            sock.settimeout(20)
            sock.sendall(keep + BODY + head_of(16385) + BODY)
            second = b""
            with contextlib.suppress(OSError):
                while chunk := sock.recv(65536):
                    second += chunk
    assert both.count(b"HTTP/1.1 200 OK") == 2, both[:400]
    assert second.count(b"HTTP/1.1 200 OK") == 1, second[:400]
    assert b"HTTP/1.1 400 Bad Request" in second, second[:400]
