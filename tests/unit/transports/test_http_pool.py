"""The client's HTTP/1.1 connection pool (transports/http/client/pool.py), under an httpx
client, against a raw socket server that answers each request with bytes the test chose:
the body framings, keep-alive and its limits, informational responses, the failures
httpx's own transport raises, timeouts and cancellation."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from mcpkit.transports.http.client.exchange import HttpExchange
from mcpkit.transports.http.client.pool import ConnectionPool

#: What the server does with one request: (head, body) -> bytes to send, then whether to close.
Answer = Callable[[bytes, bytes], tuple[bytes, bool]]


class RawServer:
    """Reads requests (head, then a ``Content-Length`` or chunked body) and sends the
    answer's bytes; counts connections and requests."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.connections = 0
        self.requests: list[tuple[bytes, bytes]] = []
        self.writers: list[asyncio.StreamWriter] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lower = head.lower()
                body = b""
                if b"content-length:" in lower:
                    size = int(lower.split(b"content-length:")[1].split(b"\r\n")[0])
                    body = await reader.readexactly(size)
                elif b"transfer-encoding: chunked" in lower:
                    while True:
                        size = int((await reader.readuntil(b"\r\n")).strip(), 16)
                        chunk = await reader.readexactly(size + 2)
                        if not size:
                            break
                        body += chunk[:-2]
                self.requests.append((head, body))
                data, close = self.answer(head, body)
                writer.write(data)
                await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def ok(body: bytes = b'{"ok":true}', extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n%bContent-Length: %d\r\n\r\n%b" % (extra, len(body), body)


@asynccontextmanager
async def serve(answer: Answer, **pool: object) -> AsyncIterator[tuple[RawServer, httpx.AsyncClient, str]]:
    raw = RawServer(answer)
    server = await asyncio.start_server(raw.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = httpx.AsyncClient(transport=ConnectionPool(**pool), timeout=httpx.Timeout(5.0))  # type: ignore[arg-type]
    try:
        yield raw, client, f"http://127.0.0.1:{port}/mcp"
    finally:
        await client.aclose()
        server.close()
        for writer in raw.writers:
            writer.close()


async def test_a_kept_alive_connection_carries_the_next_requests() -> None:
    async with serve(lambda head, body: (ok(body), False)) as (raw, client, url):
        for i in range(5):
            resp = await client.post(url, content=b"n%d" % i)
            assert (resp.status_code, resp.content, resp.reason_phrase, resp.http_version) == (200, b"n%d" % i, "OK", "HTTP/1.1")
        assert raw.connections == 1
        head = raw.requests[0][0]
        assert head.startswith(b"POST /mcp HTTP/1.1\r\n")
        assert b"\r\nhost: 127.0.0.1:" in head.lower()


async def test_concurrent_requests_open_a_connection_each_and_keep_them() -> None:
    async with serve(lambda head, body: (ok(body), False)) as (raw, client, url):
        for _ in range(3):
            got = await asyncio.gather(*(client.post(url, content=b"%d" % i) for i in range(8)))
            assert [r.content for r in got] == [b"%d" % i for i in range(8)]
        assert raw.connections == 8


async def test_chunked_bodies_with_extensions_and_trailers() -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-T: 1\r\n\r\n"
    )
    async with serve(lambda head, body: (chunked, False)) as (raw, client, url):
        assert (await client.get(url)).content == b"hello world"
        assert (await client.get(url)).content == b"hello world"
        assert raw.connections == 1


async def test_streamed_request_bodies_are_sent_chunked() -> None:
    async def parts() -> AsyncIterator[bytes]:
        yield b"ab"
        yield b""
        yield b"cd"

    async with serve(lambda head, body: (ok(body), False)) as (raw, client, url):
        resp = await client.post(url, content=parts())
        assert resp.content == b"abcd"
        assert b"transfer-encoding: chunked" in raw.requests[0][0].lower()


async def test_a_body_ended_by_closing_the_connection() -> None:
    async with serve(lambda head, body: (b"HTTP/1.1 200 OK\r\n\r\nall of it", True)) as (raw, client, url):
        assert (await client.get(url)).content == b"all of it"
        assert (await client.get(url)).content == b"all of it"
        assert raw.connections == 2  # never reused


async def test_connection_close_and_http_1_0_are_not_reused() -> None:
    answers = [ok(extra=b"Connection: close\r\n"), b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi"]
    async with serve(lambda head, body: (answers[len(raw.requests) % 2 - 1], False)) as (raw, client, url):
        for _ in range(4):
            assert (await client.get(url)).status_code == 200
        assert raw.connections == 4


async def test_informational_responses_are_skipped_and_204_has_no_body() -> None:
    answers = {b"/a": b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"after"), b"/b": b"HTTP/1.1 204 No Content\r\n\r\n"}
    async with serve(lambda head, body: (answers[head.split(b" ")[1]], False)) as (raw, client, url):
        base = url.removesuffix("/mcp")
        assert (await client.get(base + "/a")).content == b"after"
        resp = await client.get(base + "/b")
        assert (resp.status_code, resp.content) == (204, b"")
        assert (await client.get(base + "/a")).content == b"after"
        assert raw.connections == 1


async def test_an_idle_connection_the_server_closed_is_not_used_again() -> None:
    async with serve(lambda head, body: (ok(body), False)) as (raw, client, url):
        await client.get(url)
        raw.writers[0].close()
        await asyncio.sleep(0.05)
        assert (await client.post(url, content=b"x")).content == b"x"
        assert raw.connections == 2


async def test_idle_connections_past_the_keepalive_expiry_are_closed() -> None:
    async with serve(lambda head, body: (ok(body), False), keepalive_expiry=0.05) as (raw, client, url):
        await client.get(url)
        await asyncio.sleep(0.1)
        await client.get(url)
        assert raw.connections == 2


async def test_at_most_max_keepalive_idle_connections_are_kept() -> None:
    async with serve(lambda head, body: (ok(body), False), max_keepalive=2) as (raw, client, url):
        await asyncio.gather(*(client.get(url) for _ in range(4)))
        await asyncio.gather(*(client.get(url) for _ in range(4)))
        assert raw.connections == 6  # 2 kept of the first 4, 2 new ones


async def test_requests_beyond_max_connections_wait_for_one() -> None:
    async with serve(lambda head, body: (ok(body), False), max_connections=2) as (raw, client, url):
        got = await asyncio.gather(*(client.post(url, content=b"%d" % i) for i in range(6)))
        assert [r.content for r in got] == [b"%d" % i for i in range(6)]
        assert raw.connections == 2


async def test_pool_timeout() -> None:
    async with serve(lambda head, body: (ok(), False), max_connections=1) as (_raw, client, url):
        async with client.stream("GET", url):  # holds the only connection, body unread
            with pytest.raises(httpx.PoolTimeout):
                await client.get(url, timeout=httpx.Timeout(5.0, pool=0.05))
        assert (await client.get(url)).status_code == 200


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (b"", httpx.RemoteProtocolError),  # closed before any response
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", httpx.RemoteProtocolError),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", httpx.RemoteProtocolError),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", httpx.RemoteProtocolError),
        (b"SSH-2.0-OpenSSH\r\n\r\n", httpx.RemoteProtocolError),
        (b"HTTP/1.1 200 OK\r\n bad\r\n\r\n", httpx.RemoteProtocolError),
        (b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", httpx.RemoteProtocolError),
    ],
)
async def test_broken_responses_raise_what_httpx_raises(answer: bytes, error: type[Exception]) -> None:
    async with serve(lambda head, body: (answer, True)) as (_raw, client, url):
        with pytest.raises(error):
            await client.get(url)
        assert isinstance(error("x"), httpx.TransportError)


async def test_a_server_that_is_not_there() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    async with httpx.AsyncClient(transport=ConnectionPool()) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(f"http://127.0.0.1:{port}/")
        with pytest.raises(httpx.UnsupportedProtocol):
            await client.get("ftp://127.0.0.1/")


async def test_read_timeout_and_a_slow_body() -> None:
    async with serve(lambda head, body: (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", False)) as (_raw, client, url):
        with pytest.raises(httpx.ReadTimeout):
            await client.get(url, timeout=httpx.Timeout(5.0, read=0.05))
    async with serve(lambda head, body: (b"", False)) as (_raw, client, url):
        with pytest.raises(httpx.ReadTimeout):
            await client.get(url, timeout=httpx.Timeout(5.0, read=0.05))


async def test_cancelling_a_read_closes_its_connection() -> None:
    async with serve(lambda head, body: (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", False)) as (raw, client, url):
        task = asyncio.ensure_future(client.get(url))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        raw.answer = lambda head, body: (ok(), False)
        assert (await client.get(url)).status_code == 200
        assert raw.connections == 2  # the interrupted one was closed, not reused


async def test_a_large_body_read_slowly_arrives_whole() -> None:
    """Reading pauses while a megabyte waits unread, and resumes as it is taken."""
    big = bytes(range(256)) * 40_000  # 10 MB
    async with serve(lambda head, body: (ok(big), False)) as (raw, client, url):
        async with client.stream("GET", url) as resp:
            parts = []
            async for part in resp.aiter_raw():
                parts.append(part)
                await asyncio.sleep(0)
        assert b"".join(parts) == big
        assert (await client.get(url)).content == big
        assert raw.connections == 1


async def test_a_streamed_response_closed_early_is_not_reused() -> None:
    async with serve(lambda head, body: (ok(b"x" * 100_000), False)) as (raw, client, url):
        async with client.stream("GET", url) as resp:
            async for _ in resp.aiter_raw():
                break
        assert (await client.get(url)).content == b"x" * 100_000
        assert raw.connections == 2


async def test_a_closed_pool_refuses_requests() -> None:
    async with serve(lambda head, body: (ok(), False)) as (_raw, _client, url):
        pool = ConnectionPool()
        other = httpx.AsyncClient(transport=pool)
        assert (await other.get(url)).status_code == 200
        await other.aclose()
        with pytest.raises(httpx.ConnectError):
            await pool.handle_async_request(httpx.Request("GET", url))


def _fields(head: bytes) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    line, *rest = head.rstrip(b"\r\n").split(b"\r\n")
    return line, sorted((n.strip().lower(), v.strip()) for n, v in (h.split(b":", 1) for h in rest))


async def test_the_exchange_sends_what_httpx_s_own_client_would_and_keeps_cookies() -> None:
    """HttpExchange sends through its own client's pool directly: the same request line
    and headers as ``AsyncClient.send`` (the client's defaults under the transport's),
    and cookies the server sets ride on the next requests."""

    def answer(head: bytes, body: bytes) -> tuple[bytes, bool]:
        return ok(body, b"Set-Cookie: node=a7; Path=/\r\n"), False

    async with serve(answer) as (raw, client, url):
        settings = SimpleNamespace(url=url, connect_timeout=5.0, auth=None)
        http = HttpExchange(settings, None)
        http.open()
        try:
            for _ in range(2):
                resp = await http.send("POST", {"Accept": "application/json", "X-Extra": "1"}, b"{}")
                assert (await http.read(resp, 1000)) == (b"{}", True)
                await resp.aclose()
        finally:
            await http.aclose()
        await client.post(
            url, content=b"{}", headers={"Accept": "application/json", "X-Extra": "1", "Content-Type": "application/json"}
        )
        (first, _), (second, _), (reference, _) = raw.requests
        assert _fields(first) == _fields(reference)
        line, fields = _fields(second)
        assert (line, [f for f in fields if f[0] != b"cookie"]) == _fields(reference)
        assert (b"cookie", b"node=a7") in fields


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made with cryptography (the test extra has it)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp / "cert.pem", tmp / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pkcs8 = serialization.PrivateFormat.PKCS8
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, pkcs8, serialization.NoEncryption()))
    return cert_file, key_file


async def test_https_is_verified(tmp_path: Path) -> None:
    """TLS with the given context, kept alive like plain HTTP; by default (httpx's own
    verification) a certificate nobody vouches for is refused with ``ConnectError``."""
    cert, key = _self_signed(tmp_path)
    serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving.load_cert_chain(cert, key)
    serving.set_alpn_protocols(["h2", "http/1.1"])
    raw = RawServer(lambda head, body: (ok(body), False))
    server = await asyncio.start_server(raw.handle, "127.0.0.1", 0, ssl=serving)
    url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}/mcp"
    try:
        trusting = ssl.create_default_context(cafile=str(cert))
        async with httpx.AsyncClient(transport=ConnectionPool(verify=trusting)) as client:
            for i in range(3):
                assert (await client.post(url, content=b"%d" % i)).content == b"%d" % i
        assert raw.connections == 1
        # HTTP/1.1 offered by ALPN, as httpcore does: a server that also speaks h2 picks 1.1
        assert raw.writers[0].get_extra_info("ssl_object").selected_alpn_protocol() == "http/1.1"
        async with httpx.AsyncClient(transport=ConnectionPool()) as client:
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await client.get(url)
    finally:
        server.close()
        for writer in raw.writers:
            writer.close()


def test_the_pool_runs_on_uvloop() -> None:
    """uvloop's transports are not asyncio.Transport subclasses: the pool takes them as
    they are (a server run on uvloop whose lifespan calls another server, as a proxy's does)."""
    uvloop = pytest.importorskip("uvloop")

    async def main() -> None:
        async with serve(lambda head, body: (ok(), False)) as (raw, client, url):
            for _ in range(2):
                response = await client.get(url)
                assert response.json() == {"ok": True}
            assert raw.connections == 1

    uvloop.run(main())


async def test_a_body_read_cancelled_closes_its_connection_at_once() -> None:
    """A read of the body that is cancelled closes the connection then, not when (or if)
    the response is closed: the server sees the client gone, as with httpcore."""
    gone = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")  # 7 bytes never come
        await writer.drain()
        if await reader.read() == b"":
            gone.set()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/mcp"
    try:
        async with httpx.AsyncClient(transport=ConnectionPool()) as client:
            response = await client.send(client.build_request("GET", url), stream=True)
            reading = asyncio.ensure_future(response.aread())
            await asyncio.sleep(0)  # the read is under way, waiting for the rest
            reading.cancel()
            with pytest.raises(asyncio.CancelledError):
                await reading
            await asyncio.wait_for(gone.wait(), 30)  # before the response is closed
            await response.aclose()
    finally:
        server.close()
