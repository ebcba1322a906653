"""Every way an MCP call can fail, and what each looks like to the client.

    python examples/error_handling.py server              # serve the demo server over stdio
    python examples/error_handling.py                     # spawn that server and walk through
    python examples/error_handling.py server --http 8000  # serve it over HTTP on 127.0.0.1:8000
    python examples/error_handling.py --http              # the same walkthrough over HTTP

The walkthrough spawns this same file as a server process, the way an MCP host would,
and makes one call for each outcome in mcpkit's error contract: tool errors (the model
sees them), protocol errors (the client sees them), deadlines, cancellation and a
deliberate ``McpError``. It ends with a successful call to show that no failure hurt
the session, and exits 0.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import textwrap
from typing import Any

from mcpkit import (
    CallToolResult,
    Client,
    ClientOptions,
    Context,
    ElicitRequestParams,
    ElicitResult,
    McpError,
    RequestTimeout,
    Server,
    StdioTransport,
    TextContent,
)

# --- the server ---------------------------------------------------------------------------

server = Server("error-demo", "1.0.0", instructions="Tools that fail in every way MCP knows.")


@server.tool
def throw_error(message: str) -> str:
    """Raise an exception: becomes a tool result with isError true.

    Args:
        message: Text to put in the exception.
    """
    raise RuntimeError(f"Intentional error: {message}")


@server.tool
def return_error(code: int) -> CallToolResult:
    """Return a failed result on purpose (an expected, application-level failure).

    Args:
        code: An application error code to report.
    """
    return CallToolResult(content=[TextContent(text=f"Application error with code {code}")], is_error=True)


@server.tool
def invalid_access() -> str:
    """Read a key that is not there: an implicit exception, handled like any other."""
    settings: dict[str, str] = {}
    return settings["required_field"]


@server.tool
def success(text: str) -> str:
    """Succeed, echoing the text.

    Args:
        text: Text to echo back.
    """
    return f"Success: {text}"


@server.tool
async def slow(seconds: float, ctx: Context) -> str:
    """Sleep for a while, reporting progress ten times along the way.

    Args:
        seconds: How long to work.
    """
    for step in range(1, 11):
        await asyncio.sleep(seconds / 10)
        await ctx.report_progress(step, 10, f"step {step} of 10")
    return f"Slept {seconds} s"


@server.tool
def validate_widget(widget_id: str) -> str:
    """Reject a malformed widget id with a deliberate protocol error.

    Args:
        widget_id: Must be 8 hexadecimal digits.
    """
    if len(widget_id) != 8 or any(c not in "0123456789abcdef" for c in widget_id):
        raise McpError(-32602, "Widget id must be 8 hexadecimal digits", {"widget_id": widget_id})
    return f"Widget {widget_id} is valid"


@server.tool
async def delete_files(pattern: str, ctx: Context) -> str:
    """Delete files, after asking the user to confirm.

    Args:
        pattern: Which files.
    """
    answer = await ctx.elicit(
        f"Delete every file matching {pattern!r}?",
        {"type": "object", "properties": {"confirm": {"type": "boolean", "title": "Yes, delete them"}}},
    )
    if answer.action != "accept" or not (answer.content or {}).get("confirm"):
        return f"Nothing deleted: the user chose {answer.action!r}."
    return f"Deleted the files matching {pattern!r}."


@server.resource("demo://greeting", mime_type="text/plain")
def greeting() -> str:
    """A resource that works."""
    return "Hello from the error demo!"


@server.resource("demo://broken")
def broken() -> str:
    """A resource whose handler raises (with a secret the client must never see)."""
    raise OSError("cannot open /srv/secret/db.sqlite: permission denied")


@server.prompt
def broken_prompt() -> str:
    """A prompt whose handler raises."""
    raise ValueError("template file /srv/prompts/broken.txt is missing")


# --- the walkthrough ----------------------------------------------------------------------

_step = 0


def heading(title: str) -> None:
    global _step
    _step += 1
    print(f"\n{_step:>2}. {title}")


def show(label: str, text: str) -> None:
    lines = textwrap.wrap(text, 84) or [""]
    print(f"    {label:<6}{lines[0]}")
    for line in lines[1:]:
        print(f"    {'':<6}{line}")


def note(text: str) -> None:
    for line in textwrap.wrap(text, 90):
        print(f"    {line}")


def outcome(result: CallToolResult) -> str:
    text = " ".join(c.text for c in result.content if isinstance(c, TextContent))
    return f"{'tool error (isError: true)' if result.is_error else 'ok'}: {text}"


def protocol_error(err: McpError) -> None:
    origin = "raised locally" if err.local else "sent by the server"
    show("→", f"{type(err).__name__} {err.code} ({origin}): {err.message}")
    if err.data is not None:
        show("", f"data: {err.data}")


async def expect_error(call: Any) -> None:
    try:
        result = await call
    except McpError as err:
        protocol_error(err)
    else:
        show("→", f"unexpected success: {result}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _wait_listening(port: int, proc: asyncio.subprocess.Process, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        if proc.returncode is not None:
            raise SystemExit(f"the HTTP server exited with code {proc.returncode}")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if asyncio.get_running_loop().time() > deadline:
                raise SystemExit("the HTTP server did not start listening in time") from None
            await asyncio.sleep(0.05)
        else:
            writer.close()
            return


def _decline(request: ElicitRequestParams) -> ElicitResult:
    """The user's side of an elicitation: here, always "no"."""
    show("asked", request.message)
    return ElicitResult(action="decline")


async def walkthrough(http: bool) -> None:
    options = ClientOptions(request_timeout=10.0, on_elicit=_decline)
    print("mcpkit error-handling walkthrough")
    print("=================================")
    if not http:
        transport: Any = StdioTransport([sys.executable, __file__, "server"], stderr="devnull")
        await _walk(transport, options, "over stdio")
        return
    from mcpkit import HttpTransport

    port = _free_port()
    command = [sys.executable, __file__, "server", "--http", str(port)]
    proc = await asyncio.create_subprocess_exec(*command, stderr=asyncio.subprocess.DEVNULL)
    try:
        await _wait_listening(port, proc)
        await _walk(HttpTransport(f"http://127.0.0.1:{port}/mcp"), options, f"over HTTP at 127.0.0.1:{port}")
    finally:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def _walk(transport: Any, options: ClientOptions, how: str) -> None:
    async with Client(transport, options) as client:
        if how.startswith("over HTTP") and client.era == "modern":
            signal = "closed the request's HTTP response stream (HTTP's cancellation signal)"
        else:
            signal = "sent notifications/cancelled"
        info = client.server_info
        name = f"{info.name} {info.version}" if info else "the server"
        print(f"Started {name} {how}; speaking {client.protocol_version} ({client.era} era).")
        print("Each step makes one call and shows what the client got back.")

        heading("A tool raises an exception")
        show("call", 'throw_error(message="test error")')
        show("→", outcome(await client.call_tool("throw_error", {"message": "test error"})))
        note("A failed operation is a normal result with isError: true, so the model sees the message and can react.")

        heading("A tool returns a failed result on purpose")
        show("call", "return_error(code=42)")
        show("→", outcome(await client.call_tool("return_error", {"code": 42})))
        note("Expected failures are returned, not raised: the client checks result.is_error.")

        heading("A tool hits an implicit exception (a missing dict key)")
        show("call", "invalid_access()")
        show("→", outcome(await client.call_tool("invalid_access")))
        note("Any exception from a tool handler is a tool error, with its text flattened and bounded.")

        heading("The client calls a tool that does not exist")
        show("call", "no_such_tool()")
        await expect_error(client.call_tool("no_such_tool"))
        note("That is a protocol error: the request itself was wrong, so the client gets an McpError.")

        heading("The client sends arguments that break the tool's input schema")
        show("call", "throw_error(message=123)")
        await expect_error(client.call_tool("throw_error", {"message": 123}))
        note("Arguments are checked against the tool's JSON Schema before the tool runs; the reason is one line.")

        heading("A tool rejects a request with a deliberate McpError")
        show("call", 'validate_widget(widget_id="not-a-widget")')
        await expect_error(client.call_tool("validate_widget", {"widget_id": "not-a-widget"}))
        note("McpError is the escape hatch: its code, message and data reach the client verbatim.")

        heading("Reading resources: one that works, one whose handler raises")
        show("call", "read_resource('demo://greeting')")
        read = await client.read_resource("demo://greeting")
        show("→", f"ok: {read.contents[0].text}")
        show("call", "read_resource('demo://broken')")
        await expect_error(client.read_resource("demo://broken"))
        note(
            "Resource and prompt failures are protocol errors. Their exception text may hold paths or secrets, "
            "so the server sends 'Internal error' and a reference id, and logs the details under that id."
        )

        heading("Reading a resource that does not exist")
        show("call", "read_resource('demo://missing')")
        await expect_error(client.read_resource("demo://missing"))

        heading("A prompt whose handler raises")
        show("call", "get_prompt('broken_prompt')")
        await expect_error(client.get_prompt("broken_prompt"))

        heading("A method the server does not know")
        show("call", "send_request('tools/frobnicate')")
        await expect_error(client.send_request("tools/frobnicate"))

        heading("A call that outlives its deadline")
        steps: list[float] = []
        show("call", "slow(seconds=3) with timeout=0.8 s")
        try:
            await client.call_tool("slow", {"seconds": 3}, timeout=0.8, on_progress=lambda p, t, m: steps.append(p))
        except RequestTimeout as err:
            protocol_error(err)
            show("", f"progress seen before the deadline: {len(steps)} of 10 steps")
        note(
            f"The client raised RequestTimeout itself and {signal}, so the server stopped working. "
            "A timed-out call that changes things has an unknown outcome: retry only idempotent ones."
        )

        heading("Cancelling a call from the caller's side")
        show("call", "slow(seconds=3), cancelled after 0.3 s")
        task = asyncio.create_task(client.call_tool("slow", {"seconds": 3}))
        await asyncio.sleep(0.3)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            show("→", f"asyncio.CancelledError in the caller; the client {signal}")
        note("A cancelled request gets no response; the server frees the work as soon as it sees the notice.")

        heading("A tool asks the user, and the user declines")
        show("call", 'delete_files(pattern="*.log"); the client\'s on_elicit answers "decline"')
        show("→", outcome(await client.call_tool("delete_files", {"pattern": "*.log"})))
        how_asked = (
            "The server's question came back inside the result (input_required); the client answered "
            "and retried the call with the answer, and the tool ran again from the start."
            if client.era == "modern"
            else "The server sent elicitation/create to the client in the middle of the call and awaited the answer."
        )
        note(f"{how_asked} A decline is an answer, not an error: the tool decides what it means.")

        heading("After all of that, a call that succeeds")
        show("call", 'success(text="still here")')
        show("→", outcome(await client.call_tool("success", {"text": "still here"})))
        note("No failure above ended the session, the connection or the server process.")

    print("\nDone: the client closed the connection and the server shut down cleanly.")


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["server"]:
        if args[1:2] == ["--http"] and len(args) == 3:
            server.run("http", host="127.0.0.1", port=int(args[2]))
        else:
            server.run()
    else:
        asyncio.run(walkthrough(http="--http" in args))


if __name__ == "__main__":
    main()
