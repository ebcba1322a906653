"""Hostile: a seeded fuzz of a real server over stdio and over Streamable HTTP, both eras.

Each case (built by tests/support/servers/hostile_fuzz_cases.py from valid requests to
tests/support/servers/hostile_fuzz_server.py, then mutated) is sent on its own, and judged:

* HTTP: never a 5xx; a request with a valid id gets exactly one JSON-RPC response with
  that id, or a plain 4xx refusal of docs/http.md ("HTTP status codes");
* stdio: after the case a valid request (the sentinel) is sent; every request of the case
  with a valid id gets exactly one response with that id, unparseable input exactly one
  with id null (JSON-RPC 2.0), anything else at most one, and the sentinel succeeds;
* no crash (the process is alive after every case), no hang (every exchange is bounded),
  memory bounded (server RSS growth after warm-up below ``RSS_BOUND_MB``), and a valid
  request in each era succeeds at the end.

Reproduce: ``MCPKIT_FUZZ_SEED`` (default 1234), ``MCPKIT_FUZZ_CASES`` (default 1000 per
transport and era) and ``MCPKIT_FUZZ_FIRST`` (the first case number, default 0): a failing
case ``n`` runs alone with ``MCPKIT_FUZZ_FIRST=n MCPKIT_FUZZ_CASES=1``. Failures print the
seed, the case number and its input.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.eras import LEGACY, MODERN
from support.ports import free_port
from support.processes import listening, load_server, rss_kib, server_command
from support.wire import open_session

pytestmark = pytest.mark.timeout(60)

fz = load_server("hostile_fuzz_cases")

SEED = int(os.environ.get("MCPKIT_FUZZ_SEED", "1234"))
CASES = int(os.environ.get("MCPKIT_FUZZ_CASES", "1000"))
FIRST = int(os.environ.get("MCPKIT_FUZZ_FIRST", "0"))
RSS_BOUND_MB = 20.0
EXCHANGE_TIMEOUT = 10.0  # seconds for one case: generous on a noisy 2-core machine
SLOW_GRACE = 2.0  # how long a request may still be running after the sentinel came back
MAX_FAILURES = 200  # stop early: a broken server fails every case
#: docs/http.md, "HTTP status codes", plus 408/429 for a slow body and a busy session.
REFUSALS = {400, 403, 404, 405, 406, 408, 409, 413, 415, 429}
ERA_NAMES = ["modern", "legacy"]


def rss_mb(pid: int) -> float:
    return rss_kib(pid) / 1024


class Run:
    """Failures and figures of one fuzz run, reported together at the end: each kind of
    failure (its first line, numbers masked) with its count and its first cases."""

    def __init__(self, label: str, pid: int, stderr: Path) -> None:
        self.label = label
        self.pid = pid
        self.stderr = stderr
        self.stderr_seen = 0
        self.failures: dict[str, list[str]] = {}
        self.kinds: dict[str, int] = {}
        self.count = 0
        self.rss: dict[str, float] = {"start": rss_mb(pid)}
        self.cases = 0

    def fail(self, case: Any, why: str) -> None:
        self.count += 1
        kind = re.sub(r"id (-?\d+|'[^']*')", "id N", why.split("\n")[0])[:160]
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        examples = self.failures.setdefault(kind, [])
        if len(examples) < 3:
            examples.append(f"{why[:400]}\n      {case.describe()}")

    def server_exception(self) -> str:
        """The last exception the server logged since the previous call ('' if none)."""
        with self.stderr.open("rb") as f:
            f.seek(self.stderr_seen)
            new = f.read()
        self.stderr_seen += len(new)
        found = re.findall(rb"^[\w.]*(?:Error|Exception|Exit)\b.*$", new, re.MULTILINE)
        return found[-1][:200].decode(errors="replace") if found else ""

    @property
    def broken(self) -> bool:
        return self.count >= MAX_FAILURES

    def numbers(self) -> range:
        return range(FIRST, FIRST + CASES)

    def warmed(self, number: int) -> bool:
        return number == FIRST + max(1, CASES // 10)

    def finish(self) -> None:
        self.rss["end"] = rss_mb(self.pid)
        growth = self.rss["end"] - self.rss.get("warm", self.rss["start"])
        figures = ", ".join(f"{k} {v:.1f} MB" for k, v in self.rss.items())
        print(f"\nfuzz {self.label}: seed {SEED}, {self.cases} cases, RSS {figures} (growth {growth:.1f} MB)")
        rerun = f"MCPKIT_FUZZ_SEED={SEED} MCPKIT_FUZZ_FIRST=<case> MCPKIT_FUZZ_CASES=1"
        head = f"fuzz {self.label}: seed {SEED} (one case alone: {rerun}; with the cases before it: MCPKIT_FUZZ_CASES=<case + 1>)"
        report = "\n".join(
            f"  [{self.kinds[kind]}x] {kind}\n    " + "\n    ".join(examples) for kind, examples in self.failures.items()
        )
        if self.failures:
            pytest.fail(f"{head}: {self.count} failure(s) in {self.cases} cases\n{report}", pytrace=False)
        assert growth < RSS_BOUND_MB, f"{head}: server RSS grew by {growth:.1f} MB over {self.cases} cases ({figures})"


def check_response(msg: Any) -> str | None:
    """Why ``msg`` is not a well-formed JSON-RPC response (None if it is one)."""
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or "id" not in msg:
        return f"not a JSON-RPC response: {str(msg)[:300]}"
    if ("result" in msg) == ("error" in msg):
        return f"needs exactly one of result/error: {str(msg)[:300]}"
    err = msg.get("error")
    if err is not None and not (isinstance(err, dict) and type(err.get("code")) is int and isinstance(err.get("message"), str)):
        return f"malformed error object: {str(msg)[:300]}"
    return None


def match(expectations: list[Any], responses: list[dict[str, Any]]) -> list[str]:
    """Problems in pairing ``responses`` with the messages' ``expectations``."""
    problems: list[str] = []
    left = list(responses)

    def take(ids: tuple[Any, ...]) -> bool:
        for wanted in ids:
            for i, resp in enumerate(left):
                if resp.get("id") == wanted and type(resp.get("id")) is type(wanted):
                    del left[i]
                    return True
        return False

    for exp in expectations:
        for _ in range(exp.exact):
            if not take(exp.rids[::-1]):
                problems.append(f"no response with id {exp.rid!r}")
    for exp in expectations:
        if not exp.exact and left:
            take(exp.allowed)
    problems += [f"unexpected response: {json.dumps(resp)[:300]}" for resp in left]
    return problems


def reused_ids(expectations: list[Any], responses: list[dict[str, Any]]) -> list[str]:
    """An "id already in use" error for an id sent once in the case: every earlier
    request was answered (or refused) before the case began, so the server kept the
    id of a request it had finished with."""
    sent = Counter(exp.rid for exp in expectations if exp.exact)
    return [
        f"id {resp['id']!r} reported in use, but no request with it is in flight"
        for resp in responses
        if "already in use" in str(resp.get("error", {}).get("message", "")) and sent[resp.get("id")] < 2
    ]


# =================================================================================================
# stdio
# =================================================================================================


class StdioPeer:
    """The test's end of a spawned fuzz server's pipes; a reader task queues what it says."""

    def __init__(self, proc: asyncio.subprocess.Process, stderr: Path) -> None:
        self.proc = proc
        self.stderr = stderr
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.garbage: list[bytes] = []
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            try:
                msg = json.loads(line)
            except ValueError:
                self.garbage.append(line[:300])
                continue
            if isinstance(msg, dict) and "method" in msg:
                continue  # a notification (progress) from the server
            await self.inbox.put(msg)

    async def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await asyncio.wait_for(self.proc.stdin.drain(), EXCHANGE_TIMEOUT)

    async def call(self, message: dict[str, Any]) -> dict[str, Any]:
        await self.write(json.dumps(message).encode() + b"\n")
        out = await asyncio.wait_for(self.inbox.get(), EXCHANGE_TIMEOUT)
        assert out.get("id") == message["id"], out
        return out


@pytest.fixture
async def stdio_server(tmp_path: Path) -> AsyncIterator[StdioPeer]:
    with (tmp_path / "stderr.txt").open("wb") as errors:
        proc = await asyncio.create_subprocess_exec(
            *server_command("hostile_fuzz_server"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors
        )
        peer = StdioPeer(proc, tmp_path / "stderr.txt")
        try:
            yield peer
        finally:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()
            peer.reader.cancel()
            await asyncio.gather(peer.reader, return_exceptions=True)


def sentinel(era: str, number: int) -> dict[str, Any]:
    if era == "legacy":
        return {"jsonrpc": "2.0", "id": f"sentinel-{number}", "method": "ping"}
    message: dict[str, Any] = fz.valid_request(
        era, f"sentinel-{number}", "tools/call", {"name": "echo", "arguments": {"text": "s"}}
    )
    return message


def waiting_for(expectations: list[Any], responses: list[dict[str, Any]]) -> bool:
    """Whether a request of the case is still unanswered (its handler may still run)."""
    requests = [exp for exp in expectations if exp.exact and exp.rids != (None,) and len(exp.rids) == 1]
    return any(m.startswith("no response") for m in match(requests, responses))


async def stdio_case(peer: StdioPeer, case: Any, run: Run) -> bool:
    """Send one case and its sentinel and judge the answers; False if the server hung.
    Answers to malformed input come before the sentinel's; a request of the case may
    still be running after it, for at most ``SLOW_GRACE`` seconds."""
    data = b"".join(body + b"\n" for body in case.bodies)
    expectations = [fz.expected(line) for line in data.split(b"\n")[:-1]]
    mark = sentinel(case.era, case.number)
    await peer.write(data + json.dumps(mark).encode() + b"\n")
    responses: list[dict[str, Any]] = []
    deadline = time.monotonic() + EXCHANGE_TIMEOUT
    while True:
        try:
            msg = await asyncio.wait_for(peer.inbox.get(), max(deadline - time.monotonic(), 0.001))
        except TimeoutError:
            if deadline - time.monotonic() <= 0 and mark["id"] not in [r.get("id") for r in responses]:
                run.fail(case, f"hang: no answer to the sentinel within {EXCHANGE_TIMEOUT} s")
                return False
            break
        if isinstance(msg, dict) and msg.get("id") == mark["id"]:
            if "result" not in msg:
                run.fail(case, f"the valid request after the case failed: {msg}")
            responses.append(msg)
            deadline = min(deadline, time.monotonic() + SLOW_GRACE)
        elif problem := check_response(msg):
            run.fail(case, problem)
        else:
            responses.append(msg)
        if mark["id"] in [r.get("id") for r in responses] and not waiting_for(expectations, responses):
            break
    responses = [r for r in responses if r.get("id") != mark["id"]]
    for problem in match(expectations, responses) + reused_ids(expectations, responses):
        run.fail(case, problem)
    return True


@pytest.mark.parametrize("era", ERA_NAMES)
async def test_fuzz_stdio(stdio_server: StdioPeer, era: str) -> None:
    peer = stdio_server
    init = await peer.call({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": fz.initialize_params()})
    assert "result" in init, init
    await peer.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    run = Run(f"stdio/{era}", peer.proc.pid, peer.stderr)
    for number in run.numbers():
        if run.warmed(number):
            run.rss["warm"] = rss_mb(peer.proc.pid)
        case = fz.make_case(fz.case_rng(SEED, f"stdio-{era}", number), number, era)
        run.cases += 1
        alive = await stdio_case(peer, case, run)
        if not alive or peer.proc.returncode is not None or run.broken:
            if peer.proc.returncode is not None:
                run.fail(case, f"the server exited with {peer.proc.returncode}")
            break
    else:
        for check_era in ("modern", "legacy"):
            out = await peer.call(fz.valid_request(check_era, f"final-{check_era}", "tools/call", ECHO_FINAL))
            assert out["result"]["content"] == [{"type": "text", "text": "final"}], out
    assert not peer.garbage, f"the server wrote lines that are not JSON: {peer.garbage[:3]}"
    run.finish()


ECHO_FINAL = {"name": "echo", "arguments": {"text": "final"}}


# =================================================================================================
# Streamable HTTP
# =================================================================================================


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    port = free_port()
    with open(tmp_path / "stderr.txt", "wb") as errors:
        command = [*server_command("hostile_fuzz_server"), str(port)]
        with listening(command, port, stdout=subprocess.DEVNULL, stderr=errors) as proc:
            yield f"http://127.0.0.1:{port}/mcp", proc, tmp_path / "stderr.txt"


def sse_messages(text: str) -> list[Any]:
    """The JSON of every ``data`` of an SSE body (events split on blank lines)."""
    out: list[Any] = []
    for block in text.replace("\r\n", "\n").replace("\r", "\n").split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")]
        if data and "".join(data):
            out.append(json.loads("\n".join(data)))
    return out


def read_reply(http: httpx.Client, url: str, case: Any, body: bytes) -> tuple[int, str, list[Any]]:
    """(status, content type, JSON-RPC messages) of one request of ``case``. A GET that
    opens a stream is closed after its headers (its stream would not end)."""
    request = http.build_request(
        case.http_method, url, content=body if case.http_method == "POST" else None, headers=case.headers
    )
    resp = http.send(request, stream=True)
    try:
        ctype = resp.headers.get("content-type", "")
        if case.http_method == "GET" and resp.status_code == 200:
            return resp.status_code, ctype, []
        raw = resp.read()
    finally:
        resp.close()
    if ctype.startswith("application/json"):
        parsed = json.loads(raw)
        return resp.status_code, ctype, parsed if isinstance(parsed, list) else [parsed]
    if ctype.startswith("text/event-stream"):
        return resp.status_code, ctype, [m for m in sse_messages(raw.decode()) if not (isinstance(m, dict) and "method" in m)]
    return resp.status_code, ctype, []


def judge_http(case: Any, body: bytes, status: int, ctype: str, msgs: list[Any]) -> list[str]:
    """Problems with one HTTP answer to one body of ``case``."""
    if status >= 500:
        return [f"HTTP {status} ({ctype.split(';')[0]})"]
    problems = [p for p in map(check_response, msgs) if p]
    if problems or case.http_method != "POST":
        return problems
    exp = fz.expected(body, http=True)
    if not msgs:
        if exp.exact and status not in REFUSALS:
            return [f"HTTP {status} without a response for a message that needs one ({exp.rid!r})"]
        if status not in REFUSALS | {202}:
            return [f"HTTP {status} with no JSON-RPC body"]
        return []
    return match([exp], msgs) + reused_ids([exp], msgs)


def http_case(http: httpx.Client, url: str, case: Any, run: Run) -> None:
    for body in case.bodies:
        try:
            status, ctype, msgs = read_reply(http, url, case, body)
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            run.fail(case, f"no answer: {type(exc).__name__}: {exc}")
            run.count = max(run.count, MAX_FAILURES)  # a hung or gone server fails every later case: stop
            return
        except ValueError as exc:
            run.fail(case, f"a body that is not JSON: {exc}")
            continue
        for problem in judge_http(case, body, status, ctype, msgs):
            run.fail(case, f"{problem} {run.server_exception()}" if status >= 500 else problem)


def legacy_session(http: httpx.Client, url: str) -> str:
    return open_session(http, url)["mcp-session-id"]


def final_checks(http: httpx.Client, url: str, session_id: str) -> None:
    """A valid request in each era (and on the fuzzed legacy session) still succeeds."""
    for era, sid in (("modern", None), ("legacy", session_id), ("legacy", legacy_session(http, url))):
        message = fz.valid_request(era, f"final-{era}", "tools/call", ECHO_FINAL)
        headers = {k.decode(): v.decode() for k, v in fz.headers_for(message, era, sid)}
        resp = http.post(url, json=message, headers=headers)
        assert resp.status_code == 200, (era, resp.status_code, resp.text)
        (answer,) = sse_messages(resp.text)[-1:] if "event-stream" in resp.headers["content-type"] else [resp.json()]
        assert answer["result"]["content"] == [{"type": "text", "text": "final"}], answer


@pytest.mark.parametrize("era", ERA_NAMES)
def test_fuzz_http(http_server: tuple[str, subprocess.Popen[bytes], Path], era: str) -> None:
    url, proc, stderr = http_server
    run = Run(f"http/{era}", proc.pid, stderr)
    with httpx.Client(timeout=EXCHANGE_TIMEOUT) as http:
        session_id = legacy_session(http, url)
        for number in run.numbers():
            if run.warmed(number):
                run.rss["warm"] = rss_mb(proc.pid)
            case = fz.make_case(fz.case_rng(SEED, f"http-{era}", number), number, era, session_id, http=True)
            run.cases += 1
            http_case(http, url, case, run)
            if proc.poll() is not None:
                run.fail(case, f"the server exited with {proc.returncode}")
                break
            if run.broken:
                break
        else:
            final_checks(http, url, session_id)
    run.finish()


def test_cases_are_reproducible() -> None:
    """The same seed and number give the same case; the oracle needs answers to requests
    and to unparseable input (so that the fuzz above can fail)."""
    one = fz.make_case(fz.case_rng(SEED, "x", 7), 7, "modern", http=True)
    two = fz.make_case(fz.case_rng(SEED, "x", 7), 7, "modern", http=True)
    assert one.describe() == two.describe()
    assert fz.expected(b'{"jsonrpc":"2.0","id":3,"method":"x"}').exact == 1
    assert fz.expected(b"[" * 2000 + b"]" * 2000).exact == 1
    assert fz.expected(b'{"jsonrpc":"2.0","method":"x"}').exact == 0
    assert match([fz.expected(b'{"jsonrpc":"2.0","id":3,"method":"x"}')], []) == ["no response with id 3"]
    assert LEGACY in json.dumps(fz.initialize_params())
    assert MODERN in json.dumps(fz.META)
