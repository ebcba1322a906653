"""The floor over stdio: a JSON-RPC line echo on the standard library alone.

Per message one ``readline``, one ``json.loads`` and one ``json.dumps``: no validation,
no schemas, no threads, no event loop. What a real server costs above this is framework;
what this costs is Python, the pipes and the load generator on this machine. It answers
``initialize``, ``ping``, ``tools/list`` (the tools of _common.py, built once) and
``tools/call`` of ``echo``, ``fail`` (``isError: true``) and ``blob``; it ignores
notifications and answers anything else -32601.

    python benchmarks/perf/servers/raw_floor.py [--tools N]
"""

from __future__ import annotations

import json
import sys
from typing import Any

from _common import DESCRIPTION, WRONG, parse_args


def tool_list(n: int) -> dict[str, Any]:
    def tool(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
        schema = {"type": "object", "properties": props, "required": required}
        return {"name": name, "description": description, "inputSchema": schema}

    dummy = {"name": {"type": "string"}, "count": {"type": "integer", "default": 1}}
    return {
        "tools": [
            tool("echo", "Return the text unchanged.", {"text": {"type": "string"}}, ["text"]),
            tool("fail", "Always raises.", {}, []),
            tool("blob", "Return size times the letter x.", {"size": {"type": "integer"}}, ["size"]),
            *(tool(f"dummy_{i}", DESCRIPTION.format(i=i), dummy, ["name"]) for i in range(n)),
        ]
    }


def answer(msg: dict[str, Any], tools: dict[str, Any]) -> dict[str, Any]:
    method = msg.get("method")
    if method == "tools/call":
        params = msg["params"]
        name, arguments = params["name"], params.get("arguments") or {}
        if name == "echo":
            text = arguments["text"] + ("!" if WRONG else "")
            return {"result": {"content": [{"type": "text", "text": text}], "isError": False}}
        if name == "blob":
            return {"result": {"content": [{"type": "text", "text": "x" * arguments["size"]}], "isError": False}}
        return {"result": {"content": [{"type": "text", "text": "intentional failure"}], "isError": True}}
    if method == "tools/list":
        return {"result": tools}
    if method == "initialize":
        version = msg["params"].get("protocolVersion", "2025-11-25")
        info = {"name": "floor", "version": "0"}
        return {"result": {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info}}
    if method == "ping":
        return {"result": {}}
    return {"error": {"code": -32601, "message": "Method not found"}}


def main() -> None:
    tools = tool_list(parse_args("stdio floor").tools)
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        msg = json.loads(line)
        if "id" not in msg:
            continue  # a notification
        out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], **answer(msg, tools)}).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
