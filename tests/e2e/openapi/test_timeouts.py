"""The API's client's time limit: an API under uvicorn that never answers one route, and
the generated server's call to it ends with a tool error that says so (after its retries
for a GET), while the other routes go on answering."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from fastapi import FastAPI

from mcpkit import Client, TextContent
from mcpkit.openapi import Retries, from_openapi
from support.serving import serve_in_thread

release = threading.Event()
calls: list[str] = []
app = FastAPI()


@app.get("/never", operation_id="never")
async def never() -> dict[str, Any]:
    calls.append("never")
    await asyncio.to_thread(release.wait)  # until the test ends: no answer within any time limit
    return {}


@app.get("/now", operation_id="now")
def now() -> dict[str, Any]:
    return {"ok": True}


async def test_a_request_past_its_time_limit_is_a_tool_error() -> None:
    with serve_in_thread(app) as port:
        try:
            server = from_openapi(app.openapi(), base_url=f"http://127.0.0.1:{port}", timeout=0.5, retries=Retries(1, 0))
            async with Client(server) as client:
                late = await client.call_tool("never", {})
                assert late.is_error
                assert late.content == [TextContent(text="could not reach the API for GET /never: ReadTimeout")]
                assert calls == ["never", "never"]  # retried once: a GET
                assert (await client.call_tool("now", {})).structured_content == {"ok": True}
        finally:
            release.set()  # before uvicorn stops, which waits for its requests
