"""What the soak's parts share: the fuzz cases, the counters, RSS sampling, ports."""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "support" / "servers" / "hostile_fuzz_server.py"


def _load_cases() -> ModuleType:
    cases = ROOT / "tests" / "support" / "servers" / "hostile_fuzz_cases.py"
    spec = importlib.util.spec_from_file_location("hostile_fuzz_cases", cases)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fz = _load_cases()


class Stats:
    """Counts per kind, failures of valid requests and of the servers, RSS samples."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.examples: dict[str, str] = {}
        self.rss: dict[str, list[tuple[float, float]]] = {"stdio": [], "http": [], "store": []}

    def count(self, kind: str, n: int = 1) -> None:
        self.requests[kind] += n

    def error(self, kind: str, detail: str) -> None:
        self.errors[kind] += 1
        self.examples.setdefault(kind, detail[:500])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# =================================================================================================
# stdio
# =================================================================================================


def check_valid(msg: dict[str, Any], key: str) -> str | None:
    result = msg.get("result")
    if not isinstance(result, dict) or key not in result or result.get("isError"):
        return json.dumps(msg)[:300]
    return None


#: The valid calls both transports make: (method, params, key the result must have).
VALID_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("tools/call", {"name": "echo", "arguments": {"text": "soak"}}, "content"),
    ("tools/list", {}, "tools"),
    ("resources/read", {"uri": "data://hello"}, "contents"),
]
