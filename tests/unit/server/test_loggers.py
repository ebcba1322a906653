"""The logger names the docs tell users to attach handlers to, each receiving a record when
the documented event happens.

A logger's name is module-level code (``logging.getLogger("mcpkit.server")``), which
mutmut never mutates, and the tests that look at logs mostly use ``caplog``, which listens
on the root logger and would go on passing under any other name. Here a handler is attached
to ``logging.getLogger(name)`` itself, as the docs show:

* ``mcpkit.server`` (docs/errors.md, "Resources, prompts, completions and middleware"): a
  resource handler's exception, at ERROR, under the reference id the client got;
* ``mcpkit.http`` (docs/http.md, "Health"; docs/lifespan.md): an unexpected failure of
  the app, under the reference id of its 500;
* ``mcpkit.auth`` (docs/auth.md, docs/limits.md): a verifier that fails unforeseen, with the
  token blanked out;
* ``mcpkit.client`` (docs/timeouts-and-retries.md, "Seeing it happen"): each client event,
  at the level shown there (a call reaching its deadline: INFO);
* ``mcpkit.host`` (docs/howto/host.md): a group's server that fails, as a warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit import (
    Client,
    ClientGroup,
    ClientOptions,
    InMemorySessionStore,
    McpError,
    RequestTimeout,
    ResourceServer,
    Server,
    ServerConfig,
)
from mcpkit.auth.verifiers import FunctionVerifier
from support.eras import MODERN
from support.serving import serve_in_thread
from support.waiting import wait_until
from support.wire import modern

pytestmark = pytest.mark.timeout(60)


class Keep(logging.Handler):
    """The handler of docs/errors.md's example: keeps every record it is given."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def attached(name: str, level: int = logging.DEBUG) -> Iterator[Keep]:
    """A :class:`Keep` on ``logging.getLogger(name)``, which lets records of ``level`` and
    above through, for the duration; the logger as it was afterwards."""
    logger = logging.getLogger(name)
    keep = Keep()
    was = logger.level
    logger.setLevel(level)
    logger.addHandler(keep)
    try:
        yield keep
    finally:
        logger.removeHandler(keep)
        logger.setLevel(was)


async def test_mcpkit_server_gets_a_failing_resource_under_its_reference() -> None:
    server = Server("logged")

    @server.resource("docs://config")
    def config() -> str:
        raise OSError("cannot open /srv/app/secrets.toml")

    with attached("mcpkit.server") as keep:
        async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
            with pytest.raises(McpError) as caught:
                await client.read_resource("docs://config")
    reference = caught.value.data["reference"]
    (record,) = [r for r in keep.records if reference in r.getMessage()]
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None
    assert str(record.exc_info[1]) == "cannot open /srv/app/secrets.toml"


class _FaultyStore(InMemorySessionStore):
    """A session store whose health check fails unexpectedly."""

    async def check(self) -> None:
        raise RuntimeError("secret at /srv/secret/db.sqlite")


def test_mcpkit_http_gets_an_unexpected_failure_under_its_reference() -> None:
    app = Server("logged").asgi_app(health_path="/healthz", session_store=_FaultyStore())
    with attached("mcpkit.http") as keep, serve_in_thread(app) as port:
        resp = httpx.get(f"http://127.0.0.1:{port}/healthz/ready", timeout=10)
        assert resp.status_code == 500, resp.text
        reference = resp.json()["error"]["data"]["reference"]
        (record,) = wait_until(
            lambda: [r for r in keep.records if reference in r.getMessage()], what="the failure logged on mcpkit.http"
        )
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None
    assert "secret at /srv/secret/db.sqlite" in str(record.exc_info[1])


def test_mcpkit_auth_gets_a_verifier_failing_unforeseen() -> None:
    def verify(token: str) -> dict[str, Any] | None:
        raise RuntimeError("the user database is down")

    auth = ResourceServer(
        resource="http://127.0.0.1/mcp", authorization_servers=["https://as.example.test"], verifier=FunctionVerifier(verify)
    )
    body, headers = modern("tools/list", headers={"authorization": "Bearer tok-not-to-be-logged"})
    with attached("mcpkit.auth") as keep, serve_in_thread(Server("logged").asgi_app(path="/mcp", auth=auth)) as port:
        resp = httpx.post(f"http://127.0.0.1:{port}/mcp", json=body, headers=headers, timeout=10)
        assert resp.status_code == 503, resp.text
        records = wait_until(
            lambda: [r for r in keep.records if "the token verifier failed" in r.getMessage()], what="logged on mcpkit.auth"
        )
    text = "\n".join(logging.Formatter().format(r) for r in records)
    assert "RuntimeError: the user database is down" in text
    assert "tok-not-to-be-logged" not in text


async def test_mcpkit_client_gets_a_call_reaching_its_deadline_at_info() -> None:
    server = Server("slow")
    release = asyncio.Event()

    @server.tool
    async def hang() -> str:
        await release.wait()  # never set: the call must outlive its deadline
        return "late"

    with attached("mcpkit.client", logging.INFO) as keep:
        async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
            with pytest.raises(RequestTimeout):
                await client.call_tool("hang", timeout=0.2)
    (record,) = [r for r in keep.records if r.getMessage() == "tools/call: attempt 1 timed out after 0.2 s"]
    assert record.levelno == logging.INFO


async def test_mcpkit_host_gets_a_failed_server_as_a_warning() -> None:
    broken = ServerConfig.stdio("broken", sys.executable, ["-c", "import sys; sys.exit(1)"])
    with attached("mcpkit.host") as keep:
        async with ClientGroup({"broken": broken}, restart=False) as group:
            assert group.state("broken").state == "failed"
    (record,) = [r for r in keep.records if "'broken' failed" in r.getMessage()]
    assert record.levelno == logging.WARNING
