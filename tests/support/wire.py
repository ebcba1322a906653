"""Raw JSON-RPC over Streamable HTTP, for tests that read exactly what went over the wire:
modern-era requests with their headers, legacy sessions opened by hand, and the messages
of a JSON or SSE response. Written here once; nothing of mcpkit is used to build or read
them (the tests check mcpkit against this, not against itself)."""

from __future__ import annotations

import base64
import itertools
import json
import re
from typing import Any

import httpx

from support.eras import LEGACY, MODERN

ACCEPT = "application/json, text/event-stream"
SSE = "text/event-stream"
#: The ``_meta`` of a modern-era request that declares no client capabilities.
META: dict[str, Any] = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
#: The param a modern request's ``Mcp-Name`` header mirrors, by method.
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
INITIALIZED: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}

_ids = itertools.count(1)


def next_id() -> int:
    """A request id no other request of this process has used."""
    return next(_ids)


def header_value(value: str) -> str:
    """A header value as the spec mirrors it: as it is when plain printable ASCII, else
    ``=?base64?...?=``."""
    plain = (
        value == value.strip()
        and all(0x20 <= ord(c) <= 0x7E for c in value)
        and not (value.startswith("=?base64?") and value.endswith("?="))
    )
    return value if plain else "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


def modern(
    method: str,
    params: dict[str, Any] | None = None,
    *,
    rid: Any = None,
    meta: dict[str, Any] | None = None,
    headers: dict[str, str | bytes | None] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(body, headers) of a well-formed modern-era request; ``meta`` adds to its ``_meta``,
    ``headers`` overrides its headers (a None value drops one)."""
    params = dict(params or {})
    params["_meta"] = {**META, **(meta or {})}
    body = {"jsonrpc": "2.0", "id": rid if rid is not None else next_id(), "method": method, "params": params}
    hdrs: dict[str, Any] = {
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": params["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "mcp-method": method,
    }
    if method in NAMED and isinstance(params.get(NAMED[method]), str):
        hdrs["mcp-name"] = header_value(params[NAMED[method]])
    for key, value in (headers or {}).items():
        if value is None:
            hdrs.pop(key.lower(), None)
        else:
            hdrs[key.lower()] = value
    return body, hdrs


def initialize(version: str = LEGACY, *, rid: Any = 0, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """The body of an ``initialize`` request."""
    params = {"protocolVersion": version, "capabilities": capabilities or {}, "clientInfo": {"name": "raw", "version": "0"}}
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params}


def legacy_headers(session_id: str | None, version: str = LEGACY) -> dict[str, str]:
    """The headers of a legacy-era request (in session ``session_id`` when there is one)."""
    headers = {"accept": ACCEPT, "content-type": "application/json", "mcp-protocol-version": version}
    if session_id is not None:
        headers["mcp-session-id"] = session_id
    return headers


def request(method: str, params: dict[str, Any] | None = None, rid: Any = None) -> dict[str, Any]:
    """The body of a request without ``_meta`` (a legacy-era one)."""
    return {"jsonrpc": "2.0", "id": rid if rid is not None else next_id(), "method": method, "params": params or {}}


def open_session(
    http: httpx.Client,
    url: str,
    *,
    version: str = LEGACY,
    capabilities: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> dict[str, str]:
    """``initialize`` a legacy session, then ``notifications/initialized``; the headers the
    session's requests carry (``headers`` are sent with every one, e.g. ``authorization``)."""
    extra = headers or {}
    resp = http.post(url, json=initialize(version, capabilities=capabilities), headers={**legacy_headers(None, version), **extra})
    assert resp.status_code == 200, resp.text
    assert messages(resp)[-1]["result"]["protocolVersion"] == version, resp.text
    session = {**legacy_headers(resp.headers["mcp-session-id"], version), **extra}
    note = http.post(url, json=INITIALIZED, headers=session)
    assert note.status_code == 202, note.text
    return session


async def aopen_session(
    http: httpx.AsyncClient,
    url: str,
    *,
    version: str = LEGACY,
    capabilities: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> dict[str, str]:
    """:func:`open_session` with an async client."""
    extra = headers or {}
    resp = await http.post(
        url, json=initialize(version, capabilities=capabilities), headers={**legacy_headers(None, version), **extra}
    )
    assert resp.status_code == 200, resp.text
    assert messages(resp)[-1]["result"]["protocolVersion"] == version, resp.text
    session = {**legacy_headers(resp.headers["mcp-session-id"], version), **extra}
    note = await http.post(url, json=INITIALIZED, headers=session)
    assert note.status_code == 202, note.text
    return session


def sse_events(text: str) -> list[tuple[str | None, str]]:
    """(id, data) of every complete SSE event in ``text`` (comments skipped; an event with an
    id and no data, a priming event, has data ``""``)."""
    events: list[tuple[str | None, str]] = []
    for block in re.split(r"\r\n\r\n|\n\n|\r\r", text):
        event_id: str | None = None
        data: list[str] = []
        seen = False
        for line in re.split(r"\r\n|\n|\r", block):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "id":
                event_id, seen = value, True
            elif name == "data":
                data.append(value)
                seen = True
        if seen:
            events.append((event_id, "\n".join(data)))
    return events


def messages(resp: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a JSON or SSE response."""
    ctype = resp.headers.get("content-type", "")
    if ctype.startswith("application/json"):
        return [resp.json()]
    assert ctype.startswith(SSE), ctype
    return [json.loads(data) for _, data in sse_events(resp.text) if data]
