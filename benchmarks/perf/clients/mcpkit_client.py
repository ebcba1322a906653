"""mcpkit's client under load, for profiling the client path (``run.py profile``):
``call_tool("echo")`` in a loop with N calls in flight for a given time, every answer
checked; prints the calls per second as JSON.

    python benchmarks/perf/clients/mcpkit_client.py --stdio "python benchmarks/perf/servers/raw_floor.py" --seconds 5
    python benchmarks/perf/clients/mcpkit_client.py --http http://127.0.0.1:8000/mcp --era modern -c 16
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shlex
import time

from mcpkit import Client, ClientOptions, HttpTransport, StdioTransport, TextContent

ERAS = {"modern": "2026-07-28", "legacy": "2025-11-25"}


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--stdio", metavar="CMD", help="spawn this server and speak stdio")
    target.add_argument("--http", metavar="URL", help="a Streamable HTTP endpoint")
    p.add_argument("--era", choices=ERAS, default="legacy")
    p.add_argument("-c", "--concurrency", type=int, default=1)
    p.add_argument("--seconds", type=float, default=5.0)
    args = p.parse_args()
    transport = StdioTransport(shlex.split(args.stdio)) if args.stdio else HttpTransport(args.http)
    calls = 0
    async with Client(transport, ClientOptions(protocol_version=ERAS[args.era])) as client:
        deadline = time.perf_counter() + args.seconds

        async def worker(w: int) -> None:
            nonlocal calls
            i = 0
            while time.perf_counter() < deadline:
                text = f"w{w}-{i}"
                result = await client.call_tool("echo", {"text": text})
                block = result.content[0]
                if result.is_error or not isinstance(block, TextContent) or block.text != text:
                    raise SystemExit(f"wrong answer to {text!r}: {result}")
                calls += 1
                i += 1

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(args.concurrency)))
        elapsed = time.perf_counter() - t0
    use = resource.getrusage(resource.RUSAGE_SELF)  # the whole run, start-up included
    print(
        json.dumps(
            {
                "calls": calls,
                "seconds": round(elapsed, 3),
                "calls_per_s": round(calls / elapsed, 1),
                "cpu_us_per_call": round((use.ru_utime + use.ru_stime) / max(calls, 1) * 1e6, 1),
                "context_switches_per_call": round((use.ru_nvcsw + use.ru_nivcsw) / max(calls, 1), 2),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
