"""mcpkit's benchmark: one command for the table, the regression check, the scale figures
and the profiles (docs/performance.md).

    python benchmarks/perf/run.py                     # the table (about 15 minutes on 2 quiet cores)
    python benchmarks/perf/run.py --quick             # the same, short: checks that everything runs
    python benchmarks/perf/run.py --only stdio_echo_c1,http_echo_c16 --rounds 3
    python benchmarks/perf/run.py markdown RESULTS    # a results folder as Markdown, for docs/performance.md
    python benchmarks/perf/run.py check               # the regression check of tests/perf/test_perf_regression.py
    python benchmarks/perf/run.py scale               # 1,000 sessions, 10,000 idle SSE streams, p99 at 32 in flight
    python benchmarks/perf/run.py profile             # py-spy profiles of mcpkit's hot paths, summarised
    python benchmarks/perf/run.py inprocess           # mcpkit's own CPU per request, no sockets (--baseline-python)
    python benchmarks/perf/run.py proxy               # a call through mcpkit's Proxy vs direct (benchmarks/proxy/overhead.py)

Run it with the interpreter that has mcpkit (``pip install -e '.[bench]'``); the official
SDK and fastmcp get virtual environments of their own under .cache/bench/venvs/, made on
first use. Results go to .cache/bench/results/<date>/ (results.json, table.md, ratios.png).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mcpbench import check, inprocess, profile, scale, table
from mcpbench.load import Settings
from mcpbench.servers import CACHE, CATALOGUE, Interpreters, log

COMMANDS = ("table", "markdown", "check", "scale", "profile", "inprocess", "proxy")
PROXY_OVERHEAD = Path(__file__).resolve().parents[1] / "proxy" / "overhead.py"


def interpreters(args: argparse.Namespace) -> Interpreters:
    return Interpreters(args.mcpkit_python, args.sdk_python, args.fastmcp_python, getattr(args, "baseline_python", None))


def add_interpreters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mcpkit-python", help="interpreter with mcpkit and uvicorn (default: this one, else a venv)")
    p.add_argument("--sdk-python", help="interpreter with mcp 2.3.0 (default: a venv under .cache/bench)")
    p.add_argument("--fastmcp-python", help="interpreter with fastmcp (default: a venv under .cache/bench)")


def stamp() -> str:
    return datetime.datetime.now().strftime("%Y%m%d-%H%M%S")


def main(argv: list[str]) -> int:
    # Servers are measured as their users run them, with bytecode cached: the first,
    # unmeasured start writes it. Without this, an environment that sets the variable
    # (some CI and container images do) compiles every module edited since its .pyc was
    # written on every start, and start-up and import figures measure the compiler.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    if not argv or argv[0] not in (*COMMANDS, "-h", "--help"):
        argv = ["table", *argv]
    parser = argparse.ArgumentParser(
        prog="benchmarks/perf/run.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("table", help="every workload, servers interleaved over rounds (the default)")
    p.add_argument("--only", metavar="IDS", help="comma-separated workload ids (default: all)")
    names = ", ".join(CATALOGUE)
    p.add_argument("--servers", metavar="NAMES", help=f"comma-separated servers (the official SDK always runs): {names}")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=float, default=3.0, help="measured seconds per measurement")
    p.add_argument("--warmup", type=float, default=0.5, help="warm-up seconds per measurement")
    p.add_argument("--spawns", type=int, default=5, help="measured spawns per start-up measurement")
    p.add_argument("--quick", action="store_true", help="2 rounds of 0.5 s: to see that everything runs, not to quote")
    p.add_argument("--out", type=Path, help="results folder (default: .cache/bench/results/<date>)")
    p.add_argument("--server-logs", action="store_true", help="keep the servers' stderr in the results folder")
    p.add_argument(
        "--baseline-python",
        metavar="PYTHON",
        help="an interpreter importing another mcpkit (an earlier tree): measured as mcpkit-baseline beside mcpkit",
    )
    add_interpreters(p)

    p = sub.add_parser("markdown", help="print a results.json as the Markdown of docs/performance.md")
    p.add_argument("results", type=Path, help="results.json, or the folder holding it")
    p.add_argument("--copy-chart", type=Path, metavar="PNG", help="copy ratios.png here and link the copy (docs/…)")

    p = sub.add_parser("check", help="the short regression check (ratios against the official SDK)")
    check.add_arguments(p)
    add_interpreters(p)

    p = sub.add_parser("scale", help="many sessions and idle streams; p99 at 32 in flight")
    scale.add_arguments(p)
    add_interpreters(p)

    p = sub.add_parser("profile", help="py-spy profiles of mcpkit's stdio, HTTP and client paths")
    profile.add_arguments(p)
    add_interpreters(p)

    p = sub.add_parser("inprocess", help="mcpkit's own CPU per request, in-process (no sockets, no load generator)")
    inprocess.add_arguments(p)
    add_interpreters(p)

    p = sub.add_parser("proxy", help="a call through mcpkit's Proxy vs direct, both eras, stdio and HTTP (a Markdown table)")
    p.add_argument("--calls", type=int, default=1000, help="sequential calls per line")
    add_interpreters(p)

    args = parser.parse_args(argv)
    if args.command == "proxy":  # benchmarks/proxy/overhead.py, on mcpkit's interpreter
        python = interpreters(args).get("mcpkit")
        return subprocess.run([python, str(PROXY_OVERHEAD), "--calls", str(args.calls)], check=False).returncode
    if args.command == "inprocess":
        return inprocess.main(args, interpreters(args).get("mcpkit"))
    if args.command == "markdown":
        path = args.results / "results.json" if args.results.is_dir() else args.results
        results = json.loads(path.read_text())
        chart = path.parent / "ratios.png"
        link = chart.name if chart.exists() else None
        if link and args.copy_chart:
            shutil.copyfile(chart, args.copy_chart)
            link = args.copy_chart.name  # the page links it from its own folder
        print(table.markdown(results, link), end="")
        return 0
    if args.command == "check":
        return asyncio.run(check.main(args, interpreters(args)))
    if args.command == "scale":
        return asyncio.run(scale.main(args, interpreters(args)))
    if args.command == "profile":
        return asyncio.run(profile.main(args, interpreters(args)))

    out = args.out or CACHE / "results" / stamp()
    logs = out / "logs" if args.server_logs else None
    settings = Settings(warmup=args.warmup, seconds=args.seconds, spawns=args.spawns, logs=logs)
    rounds = args.rounds
    if args.quick:
        settings.warmup, settings.seconds, settings.spawns, settings.imports, rounds = 0.2, 0.5, 2, 2, 2
    only = set(args.servers.split(",")) if args.servers else None
    results = asyncio.run(table.run_table(table.selected(args.only), only, rounds, settings, interpreters(args)))
    text = table.write(results, out)
    print(text)
    log(f"results in {out}: {', '.join(sorted(p.name for p in out.iterdir() if p.is_file()))}")
    invalid = [f"{wid}/{name}" for wid, w in results["workloads"].items() for name, s in w["servers"].items() if not s["valid"]]
    if invalid:
        log(f"INVALID (a wrong or lost answer, or a server that failed): {', '.join(invalid)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
