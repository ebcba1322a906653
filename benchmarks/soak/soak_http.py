"""The soak's HTTP part: a real uvicorn server driven with valid requests in both eras,
the fuzz cases, and the attacks of the hardening issue (refused requests, deep nesting,
huge numbers, unknown tools, slow readers, abandoned sessions, held GET streams,
resumption with ``Last-Event-ID``)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import httpx
from soak_common import SERVER, VALID_CALLS, Stats, check_valid, free_port, fz


def headers(message: Any, era: str, session_id: str | None) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in fz.headers_for(message, era, session_id)}


def messages_of(resp: httpx.Response) -> list[Any]:
    if resp.headers.get("content-type", "").startswith("text/event-stream"):
        out = []
        for block in resp.text.replace("\r\n", "\n").split("\n\n"):
            data = [line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")]
            if data and "".join(data):
                out.append(json.loads("\n".join(data)))
        return out
    return [resp.json()] if resp.content else []


async def open_session(http: httpx.AsyncClient, url: str) -> str:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": fz.initialize_params()}
    resp = await http.post(url, json=init, headers={"accept": fz.ACCEPT, "content-type": "application/json"})
    resp.raise_for_status()
    session_id = str(resp.headers["mcp-session-id"])
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await http.post(url, json=note, headers=headers(note, "legacy", session_id))
    return session_id


async def http_valid(http: httpx.AsyncClient, url: str, stats: Stats, until: float) -> None:
    """Valid requests in both eras, one legacy session kept open (re-opened after a 404)."""
    session_id = await open_session(http, url)
    n = 0
    while time.monotonic() < until:
        for era in ("modern", "legacy"):
            for method, params, key in VALID_CALLS:
                n += 1
                message = fz.valid_request(era, f"v-{n}", method, params)
                kind = f"valid http {era} {method}"
                try:
                    resp = await http.post(
                        url, json=message, headers=headers(message, era, session_id if era == "legacy" else None)
                    )
                    msgs = [m for m in messages_of(resp) if isinstance(m, dict) and "method" not in m]
                except (httpx.HTTPError, ValueError) as exc:
                    stats.error(kind, f"{type(exc).__name__}: {exc}")
                    continue
                stats.count(f"valid http {era}")
                if resp.status_code == 404 and era == "legacy":
                    stats.count("legacy session re-opened after 404")
                    session_id = await open_session(http, url)
                elif resp.status_code != 200 or len(msgs) != 1 or check_valid(msgs[0], key) is not None:
                    stats.error(kind, f"HTTP {resp.status_code}: {resp.text[:300]}")


async def http_fuzz(http: httpx.AsyncClient, url: str, stats: Stats, seed: int, until: float) -> None:
    """The fuzz test's cases; a 5xx or a hang is an error."""
    session_id = await open_session(http, url)
    number = 0
    while time.monotonic() < until:
        rng = fz.case_rng(seed, "soak-http", number)
        case = fz.make_case(rng, number, rng.choice(["modern", "legacy"]), session_id, http=True)
        number += 1
        for body in case.bodies:
            content = body if case.http_method == "POST" else None
            try:
                async with http.stream(case.http_method, url, content=content, headers=case.headers) as resp:
                    if not (case.http_method == "GET" and resp.status_code == 200):
                        await resp.aread()
            except httpx.HTTPError as exc:
                stats.error("http fuzz: no answer", f"{type(exc).__name__}: {exc} for {case.describe()}")
                continue
            stats.count("http fuzz")
            if resp.status_code >= 500:
                stats.error("http fuzz: 5xx", f"HTTP {resp.status_code} for {case.describe()}")


async def post_expect(
    http: httpx.AsyncClient, url: str, stats: Stats, kind: str, message: Any, hdrs: dict[str, str]
) -> httpx.Response:
    """POST ``message``; a 5xx is an error of ``kind``."""
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    resp = await http.post(url, content=body, headers=hdrs)
    stats.count(kind)
    if resp.status_code >= 500:
        stats.error(f"{kind}: 5xx", f"HTTP {resp.status_code}: {resp.text[:200]}")
    return resp


async def attack_requests(http: httpx.AsyncClient, url: str, stats: Stats, until: float) -> None:
    """~8 KB unknown tool names (modern); legacy requests refused for a bad
    MCP-Protocol-Version, each followed by a valid request with the same id (which must
    succeed: a refused request leaves nothing behind); deep nesting; huge numbers."""
    session_id = await open_session(http, url)
    n = 0
    while time.monotonic() < until:
        n += 1
        call = fz.valid_request("modern", n, "tools/call", {"name": "t" * 8192 + str(n), "arguments": {}})
        await post_expect(http, url, stats, "http unknown 8 KB tool", call, headers(call, "modern", None))
        listing = fz.valid_request("legacy", f"refused-{n}", "tools/list", {})
        bad = {**headers(listing, "legacy", session_id), "mcp-protocol-version": "1999-01-01"}
        await post_expect(http, url, stats, "http refused legacy", listing, bad)
        resp = await post_expect(
            http, url, stats, "valid http legacy after refusal", listing, headers(listing, "legacy", session_id)
        )
        msgs = messages_of(resp) if resp.status_code == 200 else []
        if resp.status_code == 404:
            session_id = await open_session(http, url)
        elif len(msgs) != 1 or check_valid(msgs[-1], "tools") is not None:
            stats.error("valid http legacy after refusal", f"HTTP {resp.status_code}: {resp.text[:300]}")
        deep = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"a":' + b"[" * 2000 + b"]" * 2000 + b"}}"
        await post_expect(http, url, stats, "http deep nesting", deep, headers(call, "modern", None))
        huge = fz.valid_request("modern", n, "tools/call", {"name": "region", "arguments": {"region": "eu", "query": "q"}})
        number = ["9" * 400, "9" * 5000, "1e999", "-1e999"][n % 4]
        raw = json.dumps(huge).replace('"query": "q"', '"query": "q", "shard": ' + number).encode()
        await post_expect(http, url, stats, "http huge number", raw, headers(huge, "modern", None))


async def attack_slow_readers(url: str, stats: Stats, until: float, sockets: int = 20, hold: float = 3.0) -> None:
    """Raw connections that POST a streaming request and then read nothing for ``hold`` s."""
    port = int(url.split(":")[2].split("/")[0])
    n = 0
    while time.monotonic() < until:
        writers = []
        for _ in range(sockets):
            n += 1
            message = fz.valid_request("modern", n, "tools/call", {"name": "pause", "arguments": {"ms": 50}, "_meta": {}})
            message["params"]["_meta"] = {**fz.META, "progressToken": n}
            body = json.dumps(message).encode()
            head = "".join(f"{k}: {v}\r\n" for k, v in headers(message, "modern", None).items())
            request = f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n{head}content-length: {len(body)}\r\n\r\n"
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError as exc:
                stats.error("http slow reader: connect", str(exc))
                continue
            writer.write(request.encode() + body)
            writers.append(writer)
        stats.count("http slow readers (3 s unread)", len(writers))
        await asyncio.sleep(hold)  # the point: nobody reads
        for writer in writers:
            writer.close()


async def attack_sessions(http: httpx.AsyncClient, url: str, stats: Stats, until: float, rate: float) -> None:
    """Legacy sessions opened and abandoned (never DELETEd), ``rate`` per second."""
    while time.monotonic() < until:
        try:
            await open_session(http, url)
            stats.count("http sessions abandoned")
        except httpx.HTTPStatusError as exc:
            stats.count(f"http session refused {exc.response.status_code}")
            if exc.response.status_code >= 500 and exc.response.status_code != 503:
                stats.error("http session: 5xx", str(exc))
        await asyncio.sleep(1 / rate)


async def attack_get_streams(http: httpx.AsyncClient, url: str, stats: Stats, until: float, hold: float = 5.0) -> None:
    """A GET stream on a fresh session, held open for ``hold`` s, then dropped."""
    while time.monotonic() < until:
        try:
            session_id = await open_session(http, url)
        except httpx.HTTPStatusError:
            await asyncio.sleep(hold)
            continue
        hdrs = {"accept": "text/event-stream", "mcp-session-id": session_id, "mcp-protocol-version": fz.LEGACY}
        async with http.stream("GET", url, headers=hdrs) as resp:
            stats.count(f"http GET stream held ({resp.status_code})")
            if resp.status_code >= 500:
                stats.error("http GET stream: 5xx", str(resp.status_code))
            await asyncio.sleep(hold)


async def resume_once(http: httpx.AsyncClient, url: str, session_id: str, n: int) -> str | None:
    """A legacy call whose SSE response is dropped after its first event, then resumed
    with ``Last-Event-ID``; returns what went wrong (None: the result arrived)."""
    rid = f"resume-{n}"
    message = fz.valid_request("legacy", rid, "tools/call", {"name": "pause", "arguments": {"ms": 100}})
    message["params"]["_meta"] = {"progressToken": rid}
    last_id = None
    async with http.stream("POST", url, json=message, headers=headers(message, "legacy", session_id)) as resp:
        if resp.status_code != 200 or not resp.headers.get("content-type", "").startswith("text/event-stream"):
            await resp.aread()
            return f"POST: HTTP {resp.status_code} {resp.headers.get('content-type')}: {resp.text[:200]}"
        async for line in resp.aiter_lines():
            if line.startswith("id:"):
                last_id = line[3:].strip()
                break  # drop the stream after its first event
    if last_id is None:
        return "the SSE response had no event id"
    hdrs = {
        "accept": "text/event-stream",
        "mcp-session-id": session_id,
        "mcp-protocol-version": fz.LEGACY,
        "last-event-id": last_id,
    }
    async with http.stream("GET", url, headers=hdrs) as resp:
        if resp.status_code != 200:
            await resp.aread()
            return f"GET with Last-Event-ID: HTTP {resp.status_code}: {resp.text[:200]}"
        async for line in resp.aiter_lines():
            if line.startswith("data:") and rid in line and '"result"' in line:
                return None
    return "the resumed stream ended without the result"


async def attack_resume(http: httpx.AsyncClient, url: str, stats: Stats, until: float) -> None:
    """Dropped legacy SSE responses resumed with ``Last-Event-ID`` (valid: must succeed)."""
    session_id = await open_session(http, url)
    n = 0
    while time.monotonic() < until:
        n += 1
        try:
            problem = await asyncio.wait_for(resume_once(http, url, session_id, n), 30)
        except (httpx.HTTPError, TimeoutError) as exc:
            problem = f"{type(exc).__name__}: {exc}"
        stats.count("valid http legacy resumption")
        if problem is not None and "HTTP 404" in problem:
            session_id = await open_session(http, url)
            stats.count("legacy session re-opened after 404")
        elif problem is not None:
            stats.error("valid http legacy resumption", problem)


# =================================================================================================
# running it
# =================================================================================================


async def start_http_server() -> tuple[asyncio.subprocess.Process, str]:
    port = free_port()
    proc = await asyncio.create_subprocess_exec(sys.executable, str(SERVER), str(port), stderr=asyncio.subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while True:
        if proc.returncode is not None or time.monotonic() > deadline:
            raise RuntimeError("the HTTP server did not start")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            await asyncio.sleep(0.05)
