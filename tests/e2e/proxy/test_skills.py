"""Skills across a proxy (docs/skills.md, src/mcpkit/proxy/remote.py): over real HTTP on
both sides, the proxy declares the upstream server's skills extension with its settings
and forwards ``skills/list``, ``skills/get`` and ``resources/directory/read`` as they are
— errors included — while the skill files cross as ordinary resources; a legacy client
of the proxy is refused the methods as it would be by the server itself."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit import HttpTransport, Proxy, Server
from support.eras import LEGACY
from support.serving import serve_in_thread
from support.wire import messages, modern, open_session, request


def _upstream() -> Server:
    server = Server("upstream", page_size=1)
    server.add_skill("git-workflow", "Git conventions", "Branch from main.\n", files={"refs/COMMITS.md": "Imperative.\n"})
    server.add_skill("daily", "Today's report", lambda: "generated\n", prefix="reports")
    return server


@pytest.fixture(scope="module")
def proxy_url() -> Iterator[str]:
    with serve_in_thread(_upstream().asgi_app()) as up_port:
        upstream = f"http://127.0.0.1:{up_port}/mcp"
        with serve_in_thread(Proxy(lambda: HttpTransport(upstream)).asgi_app()) as port:
            yield f"http://127.0.0.1:{port}/mcp"


def _ask(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body, headers = modern(method, params)
    (reply,) = [m for m in messages(httpx.post(url, json=body, headers=headers, timeout=30)) if "id" in m]
    return reply


def test_the_proxy_declares_the_upstream_extension_and_forwards_every_page(proxy_url: str) -> None:
    caps = _ask(proxy_url, "server/discover", {})["result"]["capabilities"]
    assert caps["extensions"]["io.modelcontextprotocol/skills"] == {"directoryRead": True}
    assert "resources" in caps
    uris: list[str] = []
    params: dict[str, Any] = {}
    while True:  # the upstream pages one entry at a time; its cursors pass through
        page = _ask(proxy_url, "skills/list", params)["result"]
        assert page["resultType"] == "complete"
        assert {"ttlMs", "cacheScope"} <= set(page)
        uris.extend(e["uri"] for e in page["skills"])
        if "nextCursor" not in page:
            break
        params = {"cursor": page["nextCursor"]}
    assert uris == ["skill://git-workflow/SKILL.md", "skill://reports/daily/SKILL.md"]
    got = _ask(proxy_url, "skills/get", {"uri": "skill://git-workflow/SKILL.md"})["result"]["skill"]
    for resource in got["resources"]:
        (content,) = _ask(proxy_url, "resources/read", {"uri": resource["uri"]})["result"]["contents"]
        assert "sha256:" + hashlib.sha256(content["text"].encode()).hexdigest() == resource["digest"]
    dynamic = _ask(proxy_url, "skills/get", {"uri": "skill://reports/daily/SKILL.md"})["result"]["skill"]
    assert dynamic["resources"] == "dynamic"
    first = _ask(proxy_url, "resources/directory/read", {"uri": "skill://git-workflow"})["result"]
    second = _ask(proxy_url, "resources/directory/read", {"uri": "skill://git-workflow", "cursor": first["nextCursor"]})
    children = first["resources"] + second["result"]["resources"]
    assert "nextCursor" not in second["result"]
    assert [(c["name"], c["mimeType"]) for c in children] == [("git-workflow", "text/markdown"), ("refs", "inode/directory")]


def test_the_upstream_refusals_cross_the_proxy_unchanged(proxy_url: str) -> None:
    missing = _ask(proxy_url, "skills/get", {"uri": "skill://nothing/SKILL.md"})["error"]
    assert (missing["code"], missing["message"]) == (-32602, "No skill is served at skill://nothing/SKILL.md")
    not_dir = _ask(proxy_url, "resources/directory/read", {"uri": "skill://git-workflow/SKILL.md"})["error"]
    assert (not_dir["code"], not_dir["message"]) == (-32602, "skill://git-workflow/SKILL.md is not a directory resource")
    traversal = _ask(proxy_url, "resources/read", {"uri": "skill://git-workflow/../git-workflow/SKILL.md"})["error"]
    assert traversal["code"] == -32602


def test_a_legacy_client_of_the_proxy_is_refused_the_methods_but_reads_the_files(proxy_url: str) -> None:
    with httpx.Client(timeout=30) as http:
        session = open_session(http, proxy_url, version=LEGACY)
        (answer,) = messages(http.post(proxy_url, json=request("skills/list"), headers=session))
        assert answer["error"]["code"] == -32601
        assert "2026-07-28" in answer["error"]["message"]
        read = request("resources/read", {"uri": "skill://git-workflow/refs/COMMITS.md"})
        (answer,) = messages(http.post(proxy_url, json=read, headers=session))
        assert answer["result"]["contents"][0]["text"] == "Imperative.\n"


def test_a_proxy_whose_upstream_serves_no_skills_knows_no_skill_method() -> None:
    with serve_in_thread(Server("bare").asgi_app()) as up_port:
        upstream = f"http://127.0.0.1:{up_port}/mcp"
        with serve_in_thread(Proxy(lambda: HttpTransport(upstream)).asgi_app()) as port:
            url = f"http://127.0.0.1:{port}/mcp"
            assert "extensions" not in _ask(url, "server/discover", {})["result"]["capabilities"]
            assert _ask(url, "skills/list", {})["error"]["code"] == -32601
