"""A stand-in for a pre-2026 MCP server over stdio, with no MCP library.

It answers only after `initialize`. Before that, depending on argv[1]:
  silent   - ignores every other request (some legacy servers do)
  error    - answers -32601 Method not found
It speaks 2025-06-18 and offers one tool, `echo`.
"""

import json
import sys

mode = sys.argv[1] if len(sys.argv) > 1 else "silent"
initialized = False
for line in sys.stdin:
    msg = json.loads(line)
    rid, method = msg.get("id"), msg.get("method")
    if rid is None:
        continue
    if method == "initialize":
        initialized = True
        result = {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "legacy-raw", "version": "0.1"},
        }
        reply = {"jsonrpc": "2.0", "id": rid, "result": result}
    elif not initialized:
        if mode == "silent":
            continue
        reply = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}
    elif method == "tools/call":
        text = msg["params"]["arguments"]["text"]
        reply = {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}}
    else:
        reply = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
