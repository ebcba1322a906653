"""A :class:`ClientGroup` over servers in memory, in both eras (issue 25): names made by the
group's rule and collisions that name both servers, calls routed to their server, the
aggregate kept current by the servers' list-changed notices, and every callback told which
server it is about. tests/e2e/host/ and tests/interop/test_host.py do the same over real
processes and HTTP."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from mcpkit import (
    ClientGroup,
    ClientOptions,
    ConnectionClosed,
    Context,
    CreateMessageResult,
    ElicitResult,
    McpError,
    NameCollision,
    Server,
    ServerConfig,
    ServerState,
)
from support.eras import ERAS
from support.waiting import until

pytestmark = pytest.mark.timeout(60)


def shop(name: str) -> Server:
    """A server with a tool, a prompt, a resource and a template; its tool asks, samples,
    logs and reports progress when told to."""
    server = Server(name)

    @server.tool
    async def whoami(ctx: Context, chatty: bool = False) -> str:
        if chatty:
            await ctx.info(f"{name} says hello")
            await ctx.report_progress(1, 2, "half")
            answer = await ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
            said = await ctx.sample("Say hi", 10)
            return f"{name}: {answer.content} / {said.text}"
        return name

    @server.prompt
    def greet(who: str) -> str:
        return f"{name} greets {who}"

    @server.resource(f"{name}://readme")
    def readme() -> str:
        return f"about {name}"

    @server.resource(f"{name}://items/{{item}}")
    def item(item: str) -> str:
        return f"{name} item {item}"

    return server


@pytest.mark.parametrize("era", ERAS)
async def test_names_routing_and_every_kind_of_list(era: str) -> None:
    async with ClientGroup({"north": shop("north"), "south": shop("south")}, ClientOptions(protocol_version=era)) as group:
        assert {name: state.state for name, state in group.servers.items()} == {"north": "ready", "south": "ready"}
        assert [t.name for t in await group.list_tools()] == ["north.whoami", "south.whoami"]
        assert [p.name for p in await group.list_prompts()] == ["north.greet", "south.greet"]
        resources = await group.list_resources()
        assert [(r.uri, r.name) for r in resources] == [("north://readme", "north.readme"), ("south://readme", "south.readme")]
        assert [t.uri_template for t in await group.list_resource_templates()] == ["north://items/{item}", "south://items/{item}"]
        assert (await group.call_tool("south.whoami")).content[0].text == "south"  # type: ignore[union-attr]
        assert (await group.get_prompt("north.greet", {"who": "Ada"})).messages[0].content.text == "north greets Ada"  # type: ignore[union-attr]
        assert (await group.read_resource("south://readme")).contents[0].text == "about south"
        assert (await group.read_resource("north://items/7")).contents[0].text == "north item 7"
        assert group.route("north.whoami") == ("north", "whoami")
        assert group.server_of_uri("south://items/x") == "south"
        assert group.state("north").era == ("modern" if era.startswith("2026") else "legacy")
        assert group.client("north").is_connected
        with pytest.raises(McpError) as unknown:
            await group.call_tool("east.whoami")
        assert (unknown.value.code, unknown.value.local) == (-32602, True)
        with pytest.raises(McpError, match="No server in the group lists"):
            await group.read_resource("west://x")


async def test_a_naming_rule_of_ones_own_and_collisions_that_name_both_servers() -> None:
    servers = {"north": shop("north"), "south": shop("south")}
    async with ClientGroup(servers, namespace="{name}@{server}") as group:
        assert [t.name for t in await group.list_tools()] == ["whoami@north", "whoami@south"]
        assert (await group.call_tool("whoami@north")).content[0].text == "north"  # type: ignore[union-attr]
    async with ClientGroup(servers, namespace=lambda server, name: f"{server.upper()}_{name}") as group:
        assert [t.name for t in await group.list_tools()] == ["NORTH_whoami", "SOUTH_whoami"]
    async with ClientGroup(servers, namespace=None) as group:
        with pytest.raises(NameCollision) as caught:
            await group.list_tools()
        assert caught.value.servers == ("north", "south")
        assert "'north'" in str(caught.value)
        assert "'south'" in str(caught.value)
        assert caught.value.kind == "tool"
    async with ClientGroup({"a": shop("same"), "b": shop("same")}) as group:
        with pytest.raises(NameCollision, match="server 'a' and server 'b'"):
            await group.read_resource("same://readme")
        assert (await group.read_resource("same://readme", server="b")).contents[0].text == "about same"
    for bad in ("{server}", "{server}.{tool}"):
        with pytest.raises(ValueError, match="naming rule"):
            ClientGroup({}, namespace=bad)


@pytest.mark.parametrize("era", ERAS)
async def test_list_changed_notices_update_the_aggregate(era: str) -> None:
    changed: list[tuple[str, str]] = []
    north, south = shop("north"), shop("south")
    options = ClientOptions(protocol_version=era)
    async with ClientGroup(
        {"north": north, "south": south}, options, on_list_changed=lambda s, k: changed.append((s, k))
    ) as group:
        changed.clear()

        @south.tool
        def added() -> str:
            return "new"

        await until(lambda: ("south", "tools") in changed, what="south's new tool announced")
        assert [t.name for t in await group.list_tools()] == ["north.whoami", "south.whoami", "south.added"]
        assert (await group.call_tool("south.added")).content[0].text == "new"  # type: ignore[union-attr]
        north.remove_tool("whoami")
        await until(lambda: ("north", "tools") in changed, what="north's removal announced")
        assert [t.name for t in await group.list_tools()] == ["south.whoami", "south.added"]


@pytest.mark.parametrize("era", ERAS)
async def test_every_callback_says_which_server_it_is_about(era: str) -> None:
    logs: list[tuple[str, str, Any]] = []
    progress: list[tuple[str, float, float | None, str | None]] = []
    asked: list[tuple[str, str]] = []
    sampled: list[str] = []
    events: list[str] = []

    def on_elicit(server: str, request: Any) -> ElicitResult:  # a plain function: run on a worker thread
        asked.append((server, request.message))
        return ElicitResult(action="accept", content={"name": f"user of {server}"})

    async def on_sample(server: str, request: Any) -> CreateMessageResult:
        sampled.append(server)
        return CreateMessageResult(role="assistant", content={"type": "text", "text": f"hi from {server}'s model"}, model="m")

    group = ClientGroup(
        {"north": shop("north"), "south": shop("south")},
        ClientOptions(protocol_version=era, log_level="info"),
        on_log=lambda server, level, data, logger: logs.append((server, level, data)),
        on_progress=lambda server, p, total, message: progress.append((server, p, total, message)),
        on_elicit=on_elicit,
        on_sample=on_sample,
        on_event=lambda server, event: events.append(server),
    )
    async with group:
        north = await group.call_tool("north.whoami", {"chatty": True})
        south = await group.call_tool("south.whoami", {"chatty": True})
        await until(lambda: {server for server, _, _ in logs} == {"north", "south"}, what="both servers' log messages")
    assert north.content[0].text == "north: {'name': 'user of north'} / hi from north's model"  # type: ignore[union-attr]
    assert south.content[0].text == "south: {'name': 'user of south'} / hi from south's model"  # type: ignore[union-attr]
    # (in the modern era a handler runs again for each answer it needs: its log and progress come again)
    assert set(logs) == {("north", "info", "north says hello"), ("south", "info", "south says hello")}
    assert set(progress) == {("north", 1, 2, "half"), ("south", 1, 2, "half")}
    assert asked == [("north", "Your name?"), ("south", "Your name?")]
    assert sampled == ["north", "south"]


async def test_a_server_that_cannot_start_is_reported_and_the_others_go_on() -> None:
    states: list[ServerState] = []
    broken = ServerConfig.stdio(
        "broken", sys.executable, ["-c", "import sys; print('missing API key', file=sys.stderr); sys.exit(1)"]
    )
    async with ClientGroup({"broken": broken, "ok": shop("ok")}, restart=False, on_state=states.append) as group:
        assert group.state("ok").healthy
        state = group.state("broken")
        assert state.state == "failed"
        assert state.error is not None
        assert "exited (code 1)" in state.error
        assert "missing API key" in state.error
        assert group.stderr("broken") == ["missing API key"]
        assert [t.name for t in await group.list_tools()] == ["ok.whoami"]
        with pytest.raises(McpError, match=r"not up: broken \(failed\)"):
            await group.call_tool("broken.anything")
    assert [(s.name, s.state) for s in states if s.name == "broken"][:2] == [("broken", "starting"), ("broken", "failed")]


async def test_calls_wait_for_a_server_still_starting() -> None:
    slow = shop("slow")
    gate = asyncio.Event()

    @slow.tool
    def ping() -> str:
        return "pong"

    class Late:
        """A transport that connects once the gate opens."""

        def __init__(self) -> None:
            from mcpkit.transports.memory import ServerInMemory

            self._inner = ServerInMemory(slow)

        async def start(self, on_message: Any, on_close: Any) -> None:
            await gate.wait()
            await self._inner.start(on_message, on_close)

        def send(self, data: bytes) -> None:
            self._inner.send(data)

        async def drain(self) -> None:
            await self._inner.drain()

        async def close(self) -> None:
            await self._inner.close()

    group = ClientGroup({"slow": Late(), "fast": shop("fast")})
    try:
        await group.start(wait=False)
        await until(lambda: group.state("fast").healthy, what="the fast server")
        assert group.state("slow").state == "starting"
        assert [t.name for t in await group.list_tools()] == ["fast.whoami"]  # the slow one is not waited for
        call = asyncio.create_task(group.call_tool("slow.ping"))
        await asyncio.sleep(0)  # a chance for a wrong outcome (failing at once); nothing can finish the call before the gate
        assert not call.done()
        gate.set()
        assert (await call).content[0].text == "pong"  # type: ignore[union-attr]
    finally:
        await group.close()
    assert group.state("slow").state == "closed"
    with pytest.raises(ConnectionClosed, match="group is closed"):
        await group.call_tool("slow.ping")


def test_options_with_their_own_callbacks_are_refused() -> None:
    with pytest.raises(ValueError, match="on_log"):
        ClientGroup({}, ClientOptions(on_log=lambda *a: None))
    with pytest.raises(TypeError, match="expected a ServerConfig"):
        ClientGroup({"x": object()})  # type: ignore[dict-item]
    group = ClientGroup({"a": shop("a")})
    with pytest.raises(ValueError, match="already"):
        group.add("a", shop("a"))
    with pytest.raises(KeyError, match="no server 'b'"):
        group.state("b")
