"""The HTTP status of modern-era JSON-RPC errors over real HTTP on 127.0.0.1 (issue 10,
item 6, from what interop showed): the documented mapping by default, the
``error_status="400"`` switch, and the same status in both response modes; the legacy era
and the statuses the spec requires are left alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit import HttpError, Server
from support.processes import load_server
from support.serving import serve_in_thread
from support.wire import modern, open_session

pytestmark = pytest.mark.timeout(60)

SERVER: Server = load_server("polling_http").server


@pytest.fixture(scope="module")
def urls() -> Iterator[dict[str, str]]:
    """The server in each response mode, with the default error statuses and with "400"."""
    apps = {
        "auto": SERVER.asgi_app(),
        "sse": SERVER.asgi_app(json_response=False),
        "auto-400": SERVER.asgi_app(error_status="400"),
        "sse-400": SERVER.asgi_app(json_response=False, error_status="400"),
    }
    with (
        serve_in_thread(apps["auto"]) as a,
        serve_in_thread(apps["sse"]) as b,
        serve_in_thread(apps["auto-400"]) as c,
        serve_in_thread(apps["sse-400"]) as d,
    ):
        yield {name: f"http://127.0.0.1:{port}/mcp" for name, port in zip(apps, (a, b, c, d), strict=True)}


# --- the HTTP status of modern-era JSON-RPC errors ----------------------------------------------------

# (what, method, params, code, status by default, status with error_status="400")
ERRORS = [
    ("internal", "resources/read", {"uri": "fail://internal"}, -32603, 500, 400),
    ("unknown method", "tools/frobnicate", {}, -32601, 404, 404),
    ("unknown tool", "tools/call", {"name": "nope", "arguments": {}}, -32602, 400, 400),
    ("handler's own status", "tools/call", {"name": "mcp_fail", "arguments": {"code": -32000, "status": 503}}, -32000, 503, 503),
    ("handler's code", "tools/call", {"name": "mcp_fail", "arguments": {"code": -32099}}, -32099, 400, 400),
    ("handler's -32603", "tools/call", {"name": "mcp_fail", "arguments": {"code": -32603}}, -32603, 500, 400),
]


@pytest.mark.parametrize("mode", ["auto", "sse"])
@pytest.mark.parametrize(("what", "method", "params", "code", "spec", "four"), ERRORS, ids=[e[0] for e in ERRORS])
def test_modern_error_status_by_mapping_and_switch_in_both_response_modes(
    urls: dict[str, str], mode: str, what: str, method: str, params: dict[str, Any], code: int, spec: int, four: int
) -> None:
    with httpx.Client(timeout=10) as http:
        for name, status in ((mode, spec), (f"{mode}-400", four)):
            body, headers = modern(method, params)
            resp = http.post(urls[name], json=body, headers=headers)
            assert resp.status_code == status, (name, resp.text)
            assert resp.headers["content-type"].startswith("application/json")  # a stream could only say 200
            assert resp.json()["error"]["code"] == code
            assert resp.json()["id"] == body["id"]


def _status_raising_server() -> Server:
    server = Server("backend", "1.0")

    @server.tool
    def backend(status: int) -> str:
        """Fail as web code does: with an exception that carries an HTTP status."""
        raise HttpError(status, "the backend is down")

    return server


@pytest.fixture(scope="module")
def status_urls() -> Iterator[dict[str, str]]:
    """A server whose tool raises HttpError, in each response mode, by default and with "400"."""
    server = _status_raising_server()
    apps = {
        "auto": server.asgi_app(),
        "sse": server.asgi_app(json_response=False),
        "auto-400": server.asgi_app(error_status="400"),
        "sse-400": server.asgi_app(json_response=False, error_status="400"),
    }
    with (
        serve_in_thread(apps["auto"]) as a,
        serve_in_thread(apps["sse"]) as b,
        serve_in_thread(apps["auto-400"]) as c,
        serve_in_thread(apps["sse-400"]) as d,
    ):
        yield {name: f"http://127.0.0.1:{port}/mcp" for name, port in zip(apps, (a, b, c, d), strict=True)}


@pytest.mark.parametrize("mode", ["auto", "sse"])
@pytest.mark.parametrize(("raised", "code", "status"), [(503, -32603, 500), (401, -32603, 500), (404, -32602, 400)])
def test_an_http_status_exception_answers_its_mapped_status_with_or_without_the_switch(
    status_urls: dict[str, str], mode: str, raised: int, code: int, status: int
) -> None:
    # docs/errors.md: a modern-era answer to an exception that carries an HTTP status has
    # HTTP status 400 for -32602 and 500 for -32603. That mapping sets the error's status
    # itself (wire_errors.modern_status_error), and error_status="400" leaves a status an
    # error carries alone.
    with httpx.Client(timeout=10) as http:
        for name in (mode, f"{mode}-400"):
            body, headers = modern("tools/call", {"name": "backend", "arguments": {"status": raised}})
            resp = http.post(status_urls[name], json=body, headers=headers)
            assert resp.status_code == status, (name, resp.text)
            assert resp.json()["error"]["code"] == code
            assert "the backend is down" not in resp.text


def test_the_switch_leaves_spec_required_statuses_and_the_legacy_era_alone(urls: dict[str, str]) -> None:
    with httpx.Client(timeout=10) as http:
        body, headers = modern("tools/list", {})
        resp = http.post(urls["auto-400"], json=body, headers={**headers, "mcp-protocol-version": "2099-01-01"})
        assert resp.status_code == 400
        assert resp.json()["error"]["code"] == -32020  # header mismatch
        headers = open_session(http, urls["auto-400"])
        call = {"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": "fail://internal"}}
        resp = http.post(urls["auto-400"], json=call, headers=headers)
        assert resp.status_code == 200
        assert resp.json()["error"]["code"] == -32603


def test_error_status_must_be_a_known_value() -> None:
    with pytest.raises(ValueError, match="error_status"):
        SERVER.asgi_app(error_status="500")


# --- a cancelled legacy request is answered -32800, not 204 -------------------------------------------


# --- SIGTERM: streams end, requests in progress get a bounded grace -----------------------------------


# --- run("http") without the http extra --------------------------------------------------------------


# --- a client's modern revision refused with -32022 mid-session ---------------------------------------
