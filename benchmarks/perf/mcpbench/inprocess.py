"""mcpkit's own CPU per request, in-process: no sockets, no load generator, no uvicorn.

Each workload runs in a child process of the interpreter under test (so ``--baseline-python``
measures another tree the same way), which drives the server in its own event loop for a
fixed time and reports the process's CPU time (``time.process_time``: the loop thread and
the worker threads of plain ``def`` tools) per operation:

- ``mem_echo_c1`` / ``mem_echo_async_c1`` / ``mem_echo_modern_c1``: ``Server.serve`` over an
  in-memory transport pair, raw JSON-RPC lines in and out, one request at a time: the
  stdio path without the pipes (legacy, legacy with the ``async def`` tool, modern);
- ``mem_echo_c32`` / ``mem_echo_async_c32``: the same with 32 requests in flight (one
  operation is one request); ``mem_fail_c1``: a plain ``def`` tool that raises, one at a
  time (its ``isError`` result);
- ``asgi_echo_c16`` / ``asgi_echo_modern_c16``: the Streamable HTTP app called as an ASGI
  application by 16 concurrent clients (legacy sessions, or modern stateless requests);
- ``asgi_ask_c16``: a modern ``tools/call`` whose tool asks one question, and its retry
  with the answer (one operation is both requests).

Rounds alternate between the interpreters (each child is a fresh process); figures are
medians with min–max over rounds. ``python benchmarks/perf/run.py inprocess``.

With ``--instructions`` each child runs under valgrind (``cachegrind``, no cache
simulation) for a fixed number of operations instead of a time, twice (N and 6 N
operations, after the same warm-up), and the figure is the instructions executed per
operation (the difference over 5 N): what the machine's load, which changes CPU time by
tens of percent on a shared machine, does not change. One round is enough: two runs
differ by a few instructions per operation. It takes minutes (valgrind runs Python about
50 times slower) and needs ``valgrind`` on the PATH.
"""

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from .servers import log

WORKLOADS = (
    "mem_echo_c1",
    "mem_echo_async_c1",
    "mem_echo_modern_c1",
    "mem_echo_c32",
    "mem_echo_async_c32",
    "mem_fail_c1",
    "asgi_echo_c16",
    "asgi_echo_modern_c16",
    "asgi_ask_c16",
)
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "inprocess", "version": "1"},
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--only", metavar="IDS", help=f"comma-separated: {', '.join(WORKLOADS)}")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=float, default=2.0, help="measured seconds per measurement (after 0.3 s unmeasured)")
    p.add_argument("--baseline-python", metavar="PYTHON", help="also measure the mcpkit this interpreter imports")
    p.add_argument("--instructions", action="store_true", help="count instructions per operation under valgrind instead")


# --- the parent: rounds, interleaved -----------------------------------------------------------------


def main(args: argparse.Namespace, python: str) -> int:
    chosen = args.only.split(",") if args.only else list(WORKLOADS)
    pythons = {"mcpkit": python, **({"baseline": args.baseline_python} if args.baseline_python else {})}
    if args.instructions:
        return _instructions(chosen, pythons)
    rows: dict[str, dict[str, list[float]]] = {w: {name: [] for name in pythons} for w in chosen}
    for r in range(args.rounds):
        for workload in chosen:
            order = list(pythons.items()) if r % 2 == 0 else list(reversed(pythons.items()))
            for name, py in order:
                out = _child(py, workload, args.seconds)
                rows[workload][name].append(out["cpu_us_per_op"])
                cost = out["cpu_us_per_op"]
                log(f"  round {r + 1}/{args.rounds} {workload:>22} {name:>8}: {cost:.1f} µs/op ({out['ops']} ops)")
    print("| workload | tree | CPU µs/op, median [min–max] | baseline CPU ÷ this tree's, per round: median [min–max] |")
    print("| --- | --- | --- | --- |")
    for workload, by_tree in rows.items():
        for name, values in by_tree.items():
            ratio = ""
            if name == "mcpkit" and "baseline" in by_tree:
                ratios = [b / a for a, b in zip(values, by_tree["baseline"], strict=True)]
                ratio = f"{statistics.median(ratios):.3f} [{min(ratios):.3f}–{max(ratios):.3f}]"
            print(f"| {workload} | {name} | {statistics.median(values):.1f} [{min(values):.1f}–{max(values):.1f}] | {ratio} |")
    return 0


def _instructions(chosen: list[str], pythons: dict[str, str]) -> int:
    """One valgrind count per workload and interpreter; prints the table."""
    print("| workload | tree | instructions per operation | this tree ÷ baseline |")
    print("| --- | --- | --- | --- |")
    for workload in chosen:
        counts: dict[str, int] = {}
        n = 320 if workload.endswith(("_c16", "_c32")) else 200  # a multiple of the 16 clients and of the 32 in flight
        for name, py in pythons.items():
            counts[name] = (_valgrind(py, workload, 6 * n) - _valgrind(py, workload, n)) // (5 * n)
            log(f"  {workload:>22} {name:>8}: {counts[name]:,} instructions per operation")
        for name, count in counts.items():
            ratio = f"{count / counts['baseline']:.4f}" if "baseline" in counts and name != "baseline" else ""
            print(f"| {workload} | {name} | {count:,} | {ratio} |")
    return 0


def _valgrind(python: str, workload: str, ops: int) -> int:
    """The instructions a child executes running ``ops`` operations (and its start-up)."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from mcpbench import inprocess;"
        " inprocess.count(sys.argv[2], int(sys.argv[3]))"
    )
    here = str(Path(__file__).resolve().parents[1])
    argv = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--trace-children=yes", "--cachegrind-out-file=/dev/null"]
    argv += [python, "-c", code]
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}  # both runs alike: no .pyc written by one
    proc = subprocess.run([*argv, here, workload, str(ops)], capture_output=True, text=True, check=False, env=env)
    found = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
    if proc.returncode != 0 or found is None:
        raise SystemExit(f"{workload} on {python} under valgrind failed:\n{proc.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def _child(python: str, workload: str, seconds: float) -> dict[str, Any]:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from mcpbench import inprocess;"
        " inprocess.child(sys.argv[2], float(sys.argv[3]))"
    )
    here = str(Path(__file__).resolve().parents[1])
    proc = subprocess.run([python, "-c", code, here, workload, str(seconds)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{workload} on {python} failed:\n{proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


# --- the child: one workload, one interpreter -----------------------------------------------------------


def count(workload: str, ops: int) -> None:
    """Run ``workload`` for 100 operations unmeasured, then ``ops`` operations (under
    valgrind, which counts what this process executes)."""
    asyncio.run(_count(workload, ops))


async def _count(workload: str, ops: int) -> None:
    op = await (_memory(workload) if workload.startswith("mem_") else _asgi(workload))
    for _ in range(100):
        await op()
    done = 0
    while done < ops:
        done += await op()


def child(workload: str, seconds: float) -> None:
    """Run ``workload`` for 0.3 s unmeasured, then ``seconds``; print the CPU per operation."""
    result = asyncio.run(_run(workload, seconds))
    print(json.dumps(result))


def _server(async_tools: bool = False) -> Any:
    # (no `from __future__ import annotations` in this module: the tools' hints name the Context imported here)
    from mcpkit import Context, Server

    server = Server("inprocess", "1.0.0", state_key=b"an in-process benchmark key, 32b")
    if async_tools:

        async def echo(text: str) -> str:
            """Return the text unchanged."""
            return text
    else:

        def echo(text: str) -> str:
            """Return the text unchanged."""
            return text

    def fail() -> str:
        """Always raises."""
        raise RuntimeError("intentional failure")

    async def ask(text: str, ctx: Context) -> str:
        """Ask the client who it is."""
        answer = await ctx.elicit("Who?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="who")
        return f"{text} {(answer.content or {}).get('name')}"

    server.tool(echo)
    server.tool(fail)
    server.tool(ask)
    return server


async def _run(workload: str, seconds: float) -> dict[str, Any]:
    if workload.startswith("mem_"):
        op = await _memory(workload)
    else:
        op = await _asgi(workload)
    deadline = time.perf_counter() + 0.3
    while time.perf_counter() < deadline:
        await op()
    ops = 0
    cpu0 = time.process_time()
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        ops += await op()
    cpu = time.process_time() - cpu0
    return {"workload": workload, "ops": ops, "cpu_us_per_op": round(cpu / ops * 1e6, 2)}


async def _memory(workload: str) -> Any:
    """One request at a time over an in-memory pair: raw lines in, the answer out."""
    from mcpkit.transports.memory import memory_pair

    server = _server(async_tools=workload.startswith("mem_echo_async"))
    ours, theirs = memory_pair()
    answers: asyncio.Queue[bytes] = asyncio.Queue()
    await ours.start(answers.put_nowait, lambda reason: None)
    asyncio.get_running_loop().create_task(server.serve(theirs))
    modern = workload == "mem_echo_modern_c1"
    ids = iter(range(1, 1 << 62))
    if not modern:
        ours.send(_line(next(ids), "initialize", {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "c"}}))
        await answers.get()
        ours.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    meta = f',"_meta":{json.dumps(META)}' if modern else ""
    if workload == "mem_fail_c1":

        async def fail() -> int:
            rid = next(ids)
            ours.send(b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fail","arguments":{}}}' % rid)
            answer = json.loads(await answers.get())
            assert answer["id"] == rid, answer
            assert answer["result"]["isError"] is True, answer
            return 1

        return fail
    if workload.endswith("_c32"):

        async def op32() -> int:
            sent = []
            for _ in range(32):
                rid = next(ids)
                sent.append(rid)
                ours.send(
                    b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"t%d"}}}'
                    % (rid, rid)
                )
            got = {}
            for _ in range(32):
                answer = json.loads(await answers.get())
                got[answer["id"]] = answer["result"]["content"][0]["text"]
            assert got == {rid: f"t{rid}" for rid in sent}, got
            return 32

        return op32

    async def op() -> int:
        rid = next(ids)
        ours.send(
            b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"t%d"}%s}}'
            % (
                rid,
                rid,
                meta.encode(),
            )
        )
        answer = json.loads(await answers.get())
        assert answer["result"]["content"][0]["text"] == f"t{rid}", answer
        return 1

    return op


def _line(rid: int, method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()


async def _asgi(workload: str) -> Any:
    """16 concurrent clients of the ASGI app; one operation is one round of all 16."""
    server = _server()
    app = server.asgi_app(path="/mcp")
    ids = iter(range(1, 1 << 62))
    modern = workload != "asgi_echo_c16"

    async def post(body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        done = asyncio.Event()
        sent: list[bytes] = []
        status: list[int] = []
        out_headers: dict[str, str] = {}
        chunks = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict[str, Any]:
            if chunks:
                return chunks.pop()
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
                out_headers.update({k.decode(): v.decode() for k, v in message.get("headers", [])})
            else:
                sent.append(message.get("body", b""))
                if not message.get("more_body"):
                    done.set()

        raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        raw += [(b"content-type", b"application/json"), (b"accept", b"application/json, text/event-stream")]
        raw += [(b"host", b"127.0.0.1:8000"), (b"content-length", str(len(body)).encode())]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "root_path": "",
            "query_string": b"",
            "headers": raw,
            "server": ("127.0.0.1", 8000),
            "client": ("127.0.0.1", 50000),
        }
        await app(scope, receive, send)
        return status[0], out_headers, b"".join(sent)

    sessions: list[dict[str, str]] = []
    for _ in range(16):
        if modern:
            sessions.append({})
            continue
        init = _line(next(ids), "initialize", {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "c"}})
        _, headers, _ = await post(init, {})
        session = {"mcp-session-id": headers["mcp-session-id"], "mcp-protocol-version": LEGACY}
        await post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', session)
        sessions.append(session)

    def modern_headers(name: str) -> dict[str, str]:
        return {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name}

    async def echo(session: dict[str, str]) -> None:
        rid = next(ids)
        params: dict[str, Any] = {"name": "echo", "arguments": {"text": f"t{rid}"}}
        if modern:
            params["_meta"] = META
        status, _, body = await post(_line(rid, "tools/call", params), modern_headers("echo") if modern else session)
        assert status == 200, body
        assert json.loads(body)["result"]["content"][0]["text"] == f"t{rid}", body

    async def ask(session: dict[str, str]) -> None:
        rid = next(ids)
        params: dict[str, Any] = {"name": "ask", "arguments": {"text": f"t{rid}"}, "_meta": META}
        _, _, body = await post(_line(rid, "tools/call", params), modern_headers("ask"))
        state = json.loads(body)["result"]["requestState"]
        again = {**params, "inputResponses": {"who": {"action": "accept", "content": {"name": "n"}}}, "requestState": state}
        _, _, body = await post(_line(next(ids), "tools/call", again), modern_headers("ask"))
        assert json.loads(body)["result"]["content"][0]["text"] == f"t{rid} n", body

    one = ask if workload == "asgi_ask_c16" else echo

    async def op() -> int:
        await asyncio.gather(*(one(s) for s in sessions))
        return len(sessions)

    return op
