"""The table: every workload, its servers interleaved over rounds, ratios, Markdown, a chart.

Within a round each server is measured once, on a fresh process, one after the other;
the order rotates from round to round so that no server always goes first. A ratio is
taken within each round (so slow minutes of a shared machine cancel out) and quoted as
min / median / max over the rounds. Ratios are speed-ups: requests/s or MB/s over the
reference's, or the reference's milliseconds over ours for start-up and import.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import subprocess
from pathlib import Path
from typing import Any

from .load import Settings, measure
from .servers import CATALOGUE, CLIENTS, ROOT, Interpreters, client, label, log, server, versions
from .workloads import BY_ID, REFERENCE, TARGETS, WORKLOADS, Workload

UNITS = {"rps": "req/s", "mb_s": "MB/s", "startup_ms": "ms", "import_ms": "ms", "import_cpu_ms": "ms", "fanout_ms": "ms"}


def mmm(values: list[float | None]) -> dict[str, float] | None:
    """min / median / max of the values that are there."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    return {"min": min(present), "median": statistics.median(present), "max": max(present)}


def ratio(workload: Workload, ours: dict[str, Any], theirs: dict[str, Any]) -> float | None:
    """How many times faster ``ours`` is than ``theirs`` in one round (None if either is invalid)."""
    a, b = ours.get(workload.metric), theirs.get(workload.metric)
    if not (ours.get("valid") and theirs.get("valid") and a and b):
        return None
    return float(b / a if workload.lower_is_better else a / b)


def environment(interpreters: Interpreters, started: datetime.datetime, load: tuple[float, ...]) -> dict[str, Any]:
    def git(*args: str) -> str:
        proc = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
        return proc.stdout.strip()

    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    return {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}",
        "commit": git("rev-parse", "--short", "HEAD") + (" (with local changes)" if git("status", "--porcelain", "src") else ""),
        "load_average_at_start": load,
        "load_average_at_end": os.getloadavg(),
        "interpreters": {lib: {"python": py, **versions(py)} for lib, py in interpreters.used().items()},
    }


async def run_table(
    workloads: list[Workload], only_servers: set[str] | None, rounds: int, settings: Settings, interpreters: Interpreters
) -> dict[str, Any]:
    results: dict[str, Any] = {
        "settings": {"rounds": rounds, **{k: v for k, v in vars(settings).items() if k != "logs"}},
        "workloads": {},
    }
    started, load = datetime.datetime.now(datetime.UTC), os.getloadavg()
    for workload in workloads:
        listed = workload.servers
        if interpreters.baseline_python and workload.kind != "client":  # the earlier tree, after each mcpkit server
            listed = tuple(x for n in listed for x in ((n, f"{n}-baseline") if f"{n}-baseline" in CATALOGUE else (n,)))
        names = [
            n
            for n in listed
            if only_servers is None or n in only_servers or n == REFERENCE or n.removesuffix("-baseline") in only_servers
        ]
        if workload.kind == "client":  # the "servers" are clients, each against a fresh target
            servers = [client(n, interpreters) for n in names]
            target = server(workload.target or "floor", interpreters)
        else:
            servers, target = [server(n, interpreters) for n in names], None
        log(f"== {workload.id}: {workload.title} ({', '.join(names)})")
        per_round: list[dict[str, dict[str, Any]]] = []
        for r in range(rounds):
            order = servers[r % len(servers) :] + servers[: r % len(servers)]
            this: dict[str, dict[str, Any]] = {}
            for s in order:
                this[s.name] = await measure(s, workload, settings, target)
                shown = this[s.name].get(workload.metric)
                log(
                    f"  round {r + 1}/{rounds} {s.name:>14}: {shown} {UNITS[workload.metric]}"
                    + ("" if this[s.name]["valid"] else f"  INVALID {this[s.name]['problems']}")
                )
            per_round.append(this)
        results["workloads"][workload.id] = summarise(workload, names, per_round)
    results["environment"] = environment(interpreters, started, load)
    return results


def summarise(workload: Workload, names: list[str], per_round: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "title": workload.title,
        "metric": workload.metric,
        "floor": workload.floor,
        "kind": workload.kind,
        "servers": {},
    }
    for name in names:
        runs = [rd[name] for rd in per_round]
        entry: dict[str, Any] = {"valid": all(r["valid"] for r in runs), "runs": runs}
        for key in (workload.metric, "p50_ms", "p99_ms", "peak_rss_mb", "cpu_us_per_op"):
            entry[key] = mmm([r.get(key) for r in runs])
        for ref in {REFERENCE, workload.floor} - {None, name}:
            if ref in names:
                entry[f"x_{ref}"] = mmm([ratio(workload, rd[name], rd[ref]) for rd in per_round])
        out["servers"][name] = entry
    return out


def _fmt(v: float) -> str:
    return f"{v:.3g}" if abs(v) < 100 else f"{v:,.0f}"


def cell(stats: dict[str, float] | None, suffix: str = "") -> str:
    if not stats:
        return "–"
    return f"{_fmt(stats['median'])}{suffix} [{_fmt(stats['min'])}–{_fmt(stats['max'])}]"


def markdown(results: dict[str, Any], chart: str | None = None) -> str:
    """The run as Markdown: what it ran on, the table, the targets (paste into docs/performance.md)."""
    env, settings = results["environment"], results["settings"]
    libs = env["interpreters"]
    mcpkit_v = libs.get("mcpkit", {})
    lines = [
        f"Run on {env['date']}: {env['machine']}; load average {', '.join(f'{x:.1f}' for x in env['load_average_at_start'])} "
        f"at the start, {', '.join(f'{x:.1f}' for x in env['load_average_at_end'])} at the end.",
        f"mcpkit {mcpkit_v.get('mcpkit', '?')} at {env['commit']}, Python {mcpkit_v.get('python', '?')}, uvicorn "
        f"{mcpkit_v.get('uvicorn', '?')} on {mcpkit_v.get('http_stack', '?')}; "
        f"official SDK `mcp` {libs.get('mcp', {}).get('mcp', '–')} (uvicorn on {libs.get('mcp', {}).get('http_stack', '–')}); "
        f"fastmcp {libs.get('fastmcp', {}).get('fastmcp', '–')} (uvicorn on {libs.get('fastmcp', {}).get('http_stack', '–')}).",
        f"{settings['rounds']} interleaved rounds, a fresh server process per measurement, {settings['warmup']} s warm-up then "
        f"{settings['seconds']} s measured ({settings['spawns']} spawns for start-up). Values: median [min–max] over rounds.",
        "",
        "| workload | server | result | p50 ms | p99 ms | peak RSS MB | server CPU µs/op | × official SDK | × floor |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for w in results["workloads"].values():
        unit = UNITS[w["metric"]]
        for name, s in w["servers"].items():
            shown = label(name, w.get("kind", "load"))
            valid = "" if s["valid"] else " **(invalid)**"
            lines.append(
                f"| {w['title']} | {shown}{valid} | {cell(s[w['metric']])} {unit} | {cell(s['p50_ms'])} | {cell(s['p99_ms'])} | "
                f"{cell(s['peak_rss_mb'])} | {cell(s['cpu_us_per_op'])} | {cell(s.get(f'x_{REFERENCE}'), '×')} | "
                f"{cell(s.get('x_' + str(w['floor'])), '×')} |"
            )
    lines += ["", "| target (median) | measured | met |", "| --- | --- | --- |"]
    for t in TARGETS:
        w = results["workloads"].get(t.workload)
        s = w["servers"].get(t.server) if w else None
        if s is None:
            continue
        if t.kind == "ratio":
            stats, suffix = s.get(f"x_{t.against}"), "×"
            met = stats is not None and stats["median"] >= t.threshold
        else:
            stats = s.get("peak_rss_mb") if t.kind == "rss" else s.get(w["metric"])
            suffix = " MB" if t.kind == "rss" else f" {UNITS[w['metric']]}"
            met = stats is not None and stats["median"] <= t.threshold
        who = CATALOGUE[t.server][1]
        lines.append(f"| {BY_ID[t.workload].title}, {who}: {t.text} | {cell(stats, suffix)} | {'yes' if met else '**no**'} |")
    if chart:
        lines += ["", f"![Ratios against the official SDK]({chart})"]
    return "\n".join(lines) + "\n"


def draw_chart(results: dict[str, Any], path: Path) -> bool:
    """Bars of the median speed-up over the official SDK per workload and server, with
    min–max whiskers, on a log scale. False if matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("no chart: matplotlib is missing (pip install -e '.[bench]')")
        return False
    key = f"x_{REFERENCE}"
    workloads = [w for w in results["workloads"].values() if any(key in s for s in w["servers"].values())]
    names = [n for n in CATALOGUE if n != REFERENCE]
    palette, clients = plt.get_cmap("tab10"), plt.get_cmap("Set2")
    colours = {name: palette(i % 10) for i, name in enumerate(names)}
    colours |= {f"client:{c}": clients(i % 8) for i, c in enumerate(CLIENTS)}  # the client workloads' bars
    width = 0.8 / max(len([n for n in w["servers"] if n != REFERENCE]) for w in workloads) if workloads else 0.8
    fig, ax = plt.subplots(figsize=(12, 6), dpi=110)
    labelled: set[str] = set()
    for j, w in enumerate(workloads):
        is_client = w.get("kind") == "client"
        present = [(f"client:{n}" if is_client else n, s[key]) for n, s in w["servers"].items() if s.get(key)]
        for i, (name, stats) in enumerate(present):
            x = j + (i - (len(present) - 1) / 2) * width
            med = stats["median"]
            floor = name in ("floor", "asgi-floor")
            ax.bar(
                x,
                med,
                width * 0.92,
                color=colours[name],
                hatch="//" if floor else None,
                edgecolor="white",
                label=None if name in labelled else label(name.removeprefix("client:"), "client" if is_client else "load"),
            )
            ax.errorbar(x, med, yerr=[[med - stats["min"]], [stats["max"] - med]], color="black", capsize=2, linewidth=0.8)
            ax.annotate(_fmt(med), (x, stats["max"]), textcoords="offset points", xytext=(0, 2), ha="center", fontsize=7)
            labelled.add(name)
    ax.axhline(1, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(workloads)), [w["title"] for w in workloads], rotation=15, ha="right")
    ax.set_ylabel("× the official SDK (median, whiskers min–max)")
    ax.set_title(f"Speed-up over the official MCP SDK, {results['environment']['date']} (log scale; 1 = the official SDK)")
    ax.legend(fontsize=8, ncols=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def write(results: dict[str, Any], folder: Path) -> str:
    """results.json, ratios.png and table.md into ``folder``; returns the Markdown."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    chart = "ratios.png" if draw_chart(results, folder / "ratios.png") else None
    text = markdown(results, chart)
    (folder / "table.md").write_text(text)
    return text


def selected(ids: str | None) -> list[Workload]:
    if not ids:
        return list(WORKLOADS)
    unknown = [i for i in ids.split(",") if i not in BY_ID]
    if unknown:
        raise SystemExit(f"unknown workload(s) {unknown}; choose from {', '.join(BY_ID)}")
    return [BY_ID[i] for i in ids.split(",")]
