"""A proxy answers a 2026-07-28 client as the modern server behind it would, byte for byte
where the spec pins it: over real HTTP on both sides, with raw requests downstream.

- an upstream input round keeps its keys (``inputRequests.user_name`` stays ``user_name``,
  and the client's ``inputResponses`` under that key reach the waiting upstream handler);
- a round the downstream client cannot answer (it declared no sampling) fails the call
  with -32021 and HTTP 400, as the upstream server itself answers that client;
- a proxied tool's ``x-mcp-header`` rules are checked at the proxy: a missing or different
  ``Mcp-Param-*`` header is refused with HTTP 400 and -32020 before anything goes upstream.

The official conformance suite runs all of its server scenarios through ``mcpkit proxy``
too (scripts/conformance.sh, the proxy legs); these pin the same outcomes in the suite.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit import Context, HttpTransport, Proxy, Server
from support.serving import serve_in_thread
from support.wire import messages, modern

_NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def _upstream(calls: list[dict[str, Any]]) -> Server:
    server = Server("upstream")

    @server.tool
    async def greet(ctx: Context) -> str:
        """Greets whoever answers."""
        answer = await ctx.elicit("What is your name?", _NAME, key="user_name")
        return f"Hello, {(answer.content or {}).get('name')}!"

    @server.tool
    async def ask_model(ctx: Context) -> str:
        """Needs the client's model."""
        reply = await ctx.sample("Say hello", 10)
        return reply.text

    def where(args: dict[str, Any]) -> str:
        calls.append(args)
        return f"in {args['region']}"

    server.add_tool(
        "where",
        "The region, mirrored in Mcp-Param-Region.",
        {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}, "required": ["region"]},
        where,
    )
    return server


@pytest.fixture(scope="module")
def proxied() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    calls: list[dict[str, Any]] = []
    with serve_in_thread(_upstream(calls).asgi_app()) as up_port:
        upstream = f"http://127.0.0.1:{up_port}/mcp"
        with serve_in_thread(Proxy(lambda: HttpTransport(upstream)).asgi_app()) as port:
            yield f"http://127.0.0.1:{port}/mcp", calls


def _post(url: str, body: dict[str, Any], headers: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    resp = httpx.post(url, json=body, headers=headers, timeout=30)
    (reply,) = [m for m in messages(resp) if "id" in m]
    return resp.status_code, reply


def test_an_upstream_round_keeps_its_keys_and_the_answer_returns_by_them(proxied: tuple[str, list[Any]]) -> None:
    url, _ = proxied
    elicits = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}
    body, headers = modern("tools/call", {"name": "greet", "arguments": {}}, meta=elicits)
    status, first = _post(url, body, headers)
    assert status == 200
    result = first["result"]
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["user_name"]
    assert result["inputRequests"]["user_name"]["method"] == "elicitation/create"

    params = {
        "name": "greet",
        "arguments": {},
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}},
    }
    if "requestState" in result:
        params["requestState"] = result["requestState"]
    body, headers = modern("tools/call", params, meta=elicits)
    status, second = _post(url, body, headers)
    assert status == 200
    assert second["result"]["content"][0]["text"] == "Hello, Ada!"


def test_a_round_the_client_cannot_answer_is_minus_32021_with_400(proxied: tuple[str, list[Any]]) -> None:
    url, _ = proxied
    body, headers = modern("tools/call", {"name": "ask_model", "arguments": {}})  # no capabilities declared
    status, reply = _post(url, body, headers)
    assert status == 400
    assert reply["id"] == body["id"]
    assert reply["error"]["code"] == -32021
    assert reply["error"]["data"]["requiredCapabilities"] == {"sampling": {}}


@pytest.mark.parametrize(
    ("header", "why"),
    [
        pytest.param(None, "absent", id="absent"),
        pytest.param("us", "different", id="different"),
        pytest.param("=?base64?ZXU?=", "bad padding", id="bad-base64"),
    ],
)
def test_a_proxied_tools_header_rules_are_checked_at_the_proxy(
    proxied: tuple[str, list[Any]], header: str | None, why: str
) -> None:
    url, calls = proxied
    before = len(calls)
    body, headers = modern("tools/call", {"name": "where", "arguments": {"region": "eu"}}, headers={"mcp-param-region": header})
    status, reply = _post(url, body, headers)
    assert status == 400, why
    assert reply["error"]["code"] == -32020, why
    assert len(calls) == before, "a refused call never reached the upstream tool"

    body, headers = modern("tools/call", {"name": "where", "arguments": {"region": "eu"}}, headers={"mcp-param-region": "eu"})
    status, reply = _post(url, body, headers)
    assert status == 200
    assert reply["result"]["content"][0]["text"] == "in eu"
    assert calls[-1] == {"region": "eu"}
