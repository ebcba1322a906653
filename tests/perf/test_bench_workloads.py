"""The benchmark's client, elicitation, fan-out and host workloads (docs/performance.md,
"The workloads") run and check their answers: ``run.py --quick`` over each of them passes
with every answer right, and exits 1 with the rows of a server that answers wrongly marked
invalid (the servers' ``MCPBENCH_WRONG_ANSWERS`` switch, benchmarks/perf/servers/_common.py).

mcpkit and its clients run on this interpreter; the official SDK's client too (``mcp``
from the test extra, ``--sdk-python``). fastmcp is left out (``--servers``): it is not in
the test extra.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.paths import ROOT

pytestmark = pytest.mark.timeout(400)

RUN = ROOT / "benchmarks" / "perf" / "run.py"
#: workload id -> the servers (clients, for the client workloads) it runs here
EXPECTED = {
    "stdio_elicit_c1": {"mcpkit"},
    "http_listen_fanout": {"mcpkit-modern"},
    "client_stdio_c1": {"mcpkit", "mcp"},
    "client_http_c16": {"mcpkit", "mcp"},
    "host_stdio_c1": {"mcpkit", "mcpkit-group", "mcp"},
}


def run(out: Path, ids: list[str], wrong: bool) -> tuple[int, str, dict[str, Any]]:
    command = [sys.executable, str(RUN), "--quick", "--only", ",".join(ids), "--out", str(out)]
    command += ["--servers", "mcpkit,mcpkit-modern,mcpkit-group", "--sdk-python", sys.executable]
    env = {**os.environ, "MCPBENCH_WRONG_ANSWERS": "1" if wrong else "0"}
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=380, check=False)
    results = json.loads((out / "results.json").read_text()) if (out / "results.json").exists() else {}
    return proc.returncode, proc.stderr[-3000:], results


def test_the_new_workloads_run_with_every_answer_right(tmp_path: Path) -> None:
    code, log, results = run(tmp_path, list(EXPECTED), wrong=False)
    assert code == 0, log
    workloads = results["workloads"]
    assert {w: set(workloads[w]["servers"]) for w in EXPECTED} == EXPECTED
    for wid, w in workloads.items():
        for name, s in w["servers"].items():
            assert s["valid"], f"{wid}/{name}: {s['runs']}"
            assert all(r["ops"] > 0 and r["problems"] == [] for r in s["runs"]), f"{wid}/{name}"
    fanout = workloads["http_listen_fanout"]["servers"]["mcpkit-modern"]
    assert all(r["subscribers"] == 1000 for r in fanout["runs"])
    assert workloads["http_listen_fanout"]["metric"] == "fanout_ms"
    group = workloads["host_stdio_c1"]["servers"]["mcpkit-group"]
    assert group["x_mcpkit"] is not None  # the ratio against the direct call


def test_a_wrong_answer_marks_the_row_invalid_and_fails_the_run(tmp_path: Path) -> None:
    ids = ["stdio_elicit_c1", "http_listen_fanout", "host_stdio_c1"]
    code, log, results = run(tmp_path, ids, wrong=True)
    assert code == 1, log
    workloads = results["workloads"]
    invalid = {f"{wid}/{name}" for wid, w in workloads.items() for name, s in w["servers"].items() if not s["valid"]}
    # the official SDK's client spawns the floor with an environment of its own, without the switch
    assert invalid == {
        "stdio_elicit_c1/mcpkit",
        "http_listen_fanout/mcpkit-modern",
        "host_stdio_c1/mcpkit",
        "host_stdio_c1/mcpkit-group",
    }
    assert "INVALID" in log
    elicit = workloads["stdio_elicit_c1"]["servers"]["mcpkit"]["runs"][0]["problems"][0]
    assert "expected 't" in elicit
    client = workloads["host_stdio_c1"]["servers"]["mcpkit"]["runs"][0]
    assert client["wrong"] >= client["ops"] > 0  # every measured call caught (and the warm-up ones)
