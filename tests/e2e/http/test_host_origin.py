"""DNS-rebinding protection: the ``Host`` and ``Origin`` rules of
src/mcpkit/transports/http/server/security.py (docs/http.md, "Security"), over real HTTP.

What a browser page on another site could do: name this server by another host (``Host``),
or send a request from its own origin (``Origin``). Each rule is checked with the headers
a peer sends, on an app served on loopback (protection on by default), on a non-loopback
address of this machine (protection off by default), and with explicit allow-lists. Where
the input cannot come over HTTP (a probe list given as one string, an ASGI scope without
the server's address) the class is used directly.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit import Server
from mcpkit.transports.http.server.asgi import Reject
from mcpkit.transports.http.server.security import HostList, HostOriginGuard
from support.ports import non_loopback_address
from support.serving import serve_in_thread
from support.wire import modern

pytestmark = pytest.mark.timeout(60)

HOST_REFUSED = "Forbidden: Host not allowed\n"
ORIGIN_REFUSED = "Forbidden: Origin not allowed\n"


def _server() -> Server:
    server = Server("guarded")

    @server.tool
    def echo(text: str) -> str:
        return text

    return server


def _status(url: str, host: str | None = None, origin: str | None = None) -> tuple[int, str]:
    """A ``tools/list`` POST with these ``Host`` and ``Origin`` headers: its status and body."""
    extra = {k: v for k, v in (("host", host), ("origin", origin)) if v is not None}
    body, headers = modern("tools/list", headers=extra)
    resp = httpx.post(url, json=body, headers=headers, timeout=10)
    return resp.status_code, resp.text


@pytest.fixture(scope="module")
def loopback() -> Iterator[tuple[str, int]]:
    """Served on 127.0.0.1 with the defaults: protection on."""
    with serve_in_thread(_server().asgi_app(path="/mcp")) as port:
        yield f"http://127.0.0.1:{port}/mcp", port


@pytest.fixture(scope="module")
def lan() -> Iterator[tuple[str, str]]:
    """Served on a non-loopback address of this machine with the defaults: protection off."""
    here = non_loopback_address()
    with serve_in_thread(_server().asgi_app(path="/mcp"), host=here) as port:
        yield f"http://{here}:{port}/mcp", f"{here}:{port}"


@pytest.fixture
def listed() -> Iterator[str]:
    """Explicit lists, written as a user might: upper case, a port on one entry, a trailing
    slash. One app per test: each test sees the lists as the guard made them from these."""
    app = _server().asgi_app(
        path="/mcp",
        allowed_hosts=["MCP.Example.com", "api.example.com:8443"],
        allowed_origins=["HTTPS://App.Example.com/"],
    )
    with serve_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}/mcp"


# --- on loopback, by default ---------------------------------------------------------------------


@pytest.mark.parametrize("host", ["localhost", "LocalHost:8080", "127.0.0.1", "127.5.6.7:99", "[::1]", "[::1]:8080", "::1"])
def test_a_loopback_host_is_allowed(loopback: tuple[str, int], host: str) -> None:
    assert _status(loopback[0], host)[0] == 200


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:80", "localhost.evil.example", "[::2]:80", "[fd00::1]", "192.0.2.1", "localhost:80:80"]
)
def test_another_host_is_refused_on_loopback(loopback: tuple[str, int], host: str) -> None:
    assert _status(loopback[0], host) == (403, HOST_REFUSED)


@pytest.mark.parametrize(
    "host",
    ["[::1]x]", "[::1]evil.example", "[::1]:80x", "[::1]:x80", "[::1", "::1]", "[[::1]]", "127.0.0.1:80x", "localhost:abc"],
)
def test_a_malformed_loopback_host_is_refused_on_loopback(loopback: tuple[str, int], host: str) -> None:
    """Only ``host``, ``host:port`` and ``[v6]:port`` with a decimal port name a host:
    anything else after a loopback name is not loopback (nor any listed host)."""
    assert _status(loopback[0], host) == (403, HOST_REFUSED)


@pytest.mark.parametrize("host", ["localhost:", "[::1]:"])
def test_an_empty_port_still_names_the_host(loopback: tuple[str, int], host: str) -> None:
    assert _status(loopback[0], host)[0] == 200


@pytest.mark.parametrize(
    "origin", ["http://localhost:5173", "HTTP://LOCALHOST:5173/", "http://127.0.0.1", "https://[::1]:8443", "http://[::1]"]
)
def test_a_loopback_origin_is_allowed(loopback: tuple[str, int], origin: str) -> None:
    assert _status(loopback[0], origin=origin)[0] == 200


@pytest.mark.parametrize("origin", ["http://evil.example", "http://localhost.evil.example:5173", "null", "http://[fd00::1]"])
def test_another_origin_is_refused_on_loopback(loopback: tuple[str, int], origin: str) -> None:
    assert _status(loopback[0], origin=origin) == (403, ORIGIN_REFUSED)


def test_a_request_without_a_host_is_judged_by_its_origin_alone(loopback: tuple[str, int]) -> None:
    """HTTP/1.0 has no ``Host``: nothing to rebind, so it passes the ``Host`` rule; its
    ``Origin`` is still checked."""
    _, port = loopback

    def raw(extra: bytes) -> bytes:
        body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
        head = b"POST /mcp HTTP/1.0\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(head + extra + b"Content-Length: %d\r\n\r\n" % len(body) + body)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        return answer

    assert not raw(b"").startswith(b"HTTP/1.1 403"), raw(b"")
    refused = raw(b"Origin: http://evil.example\r\n")
    assert refused.startswith(b"HTTP/1.1 403"), refused
    assert refused.endswith(ORIGIN_REFUSED.encode()), refused


# --- off loopback, by default: an Origin must match the Host ----------------------------------------


def test_off_loopback_any_host_is_allowed_and_an_origin_must_match_it(lan: tuple[str, str]) -> None:
    url, authority = lan
    assert _status(url, "mcp.example.com")[0] == 200
    assert _status(url, "mcp.example.com:8000", "http://mcp.example.com:8000")[0] == 200
    assert _status(url, "MCP.example.com:8000", "https://mcp.example.com:8000/")[0] == 200
    assert _status(url, origin=f"http://{authority}")[0] == 200
    assert _status(url, "mcp.example.com:8000", "http://mcp.example.com") == (403, ORIGIN_REFUSED)
    assert _status(url, "mcp.example.com", "http://evil.example") == (403, ORIGIN_REFUSED)
    assert _status(url, "mcp.example.com", "http://localhost") == (403, ORIGIN_REFUSED)  # loopback is no exception
    # an origin made to end in the host is another origin
    assert _status(url, "mcp.example.com", "http://evil.example://mcp.example.com") == (403, ORIGIN_REFUSED)
    assert _status(url, "mcp.example.com", "http://mcp.example.com://mcp.example.com") == (403, ORIGIN_REFUSED)


def test_protection_can_be_turned_on_off_loopback_and_off_on_it() -> None:
    here = non_loopback_address()
    on = _server().asgi_app(path="/mcp", dns_rebinding_protection=True)
    off = _server().asgi_app(path="/mcp", dns_rebinding_protection=False)
    with serve_in_thread(on, host=here) as on_port, serve_in_thread(off) as off_port:
        assert _status(f"http://{here}:{on_port}/mcp") == (403, HOST_REFUSED)  # its own address is not loopback
        assert _status(f"http://{here}:{on_port}/mcp", "localhost", "http://localhost:3000")[0] == 200
        off_url = f"http://127.0.0.1:{off_port}/mcp"
        assert _status(off_url, "evil.example")[0] == 200
        assert _status(off_url, "evil.example", "http://evil.example")[0] == 200
        assert _status(off_url, "evil.example", "http://localhost") == (403, ORIGIN_REFUSED)


# --- explicit lists ----------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["mcp.example.com", "MCP.EXAMPLE.COM", "mcp.example.com:8000", "api.example.com:8443"])
def test_a_listed_host_is_allowed_case_insensitively_with_any_port_unless_listed_with_one(listed: str, host: str) -> None:
    assert _status(listed, host)[0] == 200


@pytest.mark.parametrize("host", ["api.example.com", "api.example.com:9999", "localhost", "127.0.0.1", "other.example.com"])
def test_a_host_not_listed_is_refused_even_loopback(listed: str, host: str) -> None:
    assert _status(listed, host) == (403, HOST_REFUSED)


def test_a_request_without_a_host_is_refused_by_a_host_list(listed: str) -> None:
    port = int(listed.split(":")[2].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"POST /mcp HTTP/1.0\r\nContent-Length: 0\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 403"), answer
    assert answer.endswith(HOST_REFUSED.encode()), answer


@pytest.mark.parametrize("origin", ["https://app.example.com", "https://APP.example.com/", "HTTPS://app.example.com"])
def test_a_listed_origin_is_allowed_case_insensitively_with_or_without_a_slash(listed: str, origin: str) -> None:
    assert _status(listed, "mcp.example.com", origin)[0] == 200


@pytest.mark.parametrize("origin", ["http://app.example.com", "https://app.example.com:8443", "http://localhost", "null"])
def test_an_origin_not_listed_is_refused_even_loopback(listed: str, origin: str) -> None:
    assert _status(listed, "mcp.example.com", origin) == (403, ORIGIN_REFUSED)


# --- probe_hosts (HostList) ------------------------------------------------------------------------


def test_a_host_list_holds_names_networks_and_star() -> None:
    hosts = HostList([" Probe.Internal ", "10.0.0.1/8", "[fd00::/8]", "lb.internal:9000", "[::1]"])
    listed = ("probe.internal", "probe.internal:8000", "10.200.0.1", "10.1.2.3:80", "[fd12::1]:80", "lb.internal:9000")
    assert "[::1]:80" in hosts
    for host in listed:
        assert host in hosts, host
    unlisted = ("", "probe.internal.evil", "11.0.0.1", "11.0.0.1:80", "lb.internal", "lb.internal:9001", "name.example", "[::2]")
    unlisted += ("[10.0.0.1", "10.0.0.1]", "[fd12::1]x]", "10.1.2.3:80x", "probe.internal:x")  # malformed: no host
    for host in unlisted:
        assert host not in hosts, host
    assert None not in hosts
    assert 10 not in hosts
    odd = HostList(["[a]b]"])  # a listed name that is no IP literal: its brackets end at the first ']'
    assert "[a]b]" in odd
    assert "[a]b]:80" not in odd  # not "[a]b]" on port 80: "[a]" then "b]:80", which is no port
    names_only = HostList(["probe.internal"])
    assert "10.0.0.1" not in names_only
    assert "" not in names_only
    assert names_only.any is False
    assert hosts.any is False
    anything = HostList(["*"])
    assert anything.any
    assert "" in anything
    assert "anything.example:1" in anything


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ("probe.internal", "probe_hosts must be a list of hosts, not one string"),
        (["probe.internal", " "], "an empty entry in probe_hosts"),
        ([""], "an empty entry in probe_hosts"),
    ],
)
def test_a_malformed_host_list_is_refused(entries: Any, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        HostList(entries)


def test_a_malformed_network_is_refused() -> None:
    with pytest.raises(ValueError, match="does not appear to be an IPv4 or IPv6 network"):
        HostList(["10.0.0.0/33"])


def test_probe_hosts_are_checked_on_the_health_endpoints_with_the_origin_rules_kept() -> None:
    app = _server().asgi_app(path="/mcp", health_path="/healthz", probe_hosts=["10.0.0.0/8", "PROBE.internal"])
    with serve_in_thread(app) as port:
        url = f"http://127.0.0.1:{port}/healthz"

        def get(host: str, origin: str | None = None) -> int:
            headers = {"host": host, **({"origin": origin} if origin else {})}
            return httpx.get(url, headers=headers, timeout=10).status_code

        assert get("10.9.8.7:8080") == 200
        assert get("probe.internal") == 200
        assert get("probe.internal:80") == 200
        assert get("11.0.0.1") == 403
        assert get("probe.internal", "http://evil.example") == 403  # the Origin rules stay
        assert get(f"127.0.0.1:{port}") == 200


# --- an ASGI server that says nothing of its address ---------------------------------------------


async def _nothing(scope: Any, receive: Any, send: Any) -> None:
    return None


def test_without_the_servers_address_protection_is_off_unless_asked_for() -> None:
    """``scope["server"]`` is optional in ASGI (a Unix socket has none): then nothing says
    the app is on loopback, and only ``dns_rebinding_protection=True`` turns it on."""
    headers = {"host": "evil.example", "origin": "http://evil.example"}
    scope: dict[str, Any] = {"type": "http", "method": "POST", "path": "/mcp", "server": None}
    HostOriginGuard(_nothing, None, None, None).check(scope, headers)
    HostOriginGuard(_nothing, None, None, None).check({**scope, "server": ("192.0.2.2", 80)}, headers)
    with pytest.raises(Reject) as refused:
        HostOriginGuard(_nothing, None, None, None).check({**scope, "server": ("127.0.0.1", 80)}, headers)
    assert refused.value.status == 403
    with pytest.raises(Reject):
        HostOriginGuard(_nothing, None, None, True).check(scope, headers)
    HostOriginGuard(_nothing, None, None, False).check({**scope, "server": ("127.0.0.1", 80)}, headers)
