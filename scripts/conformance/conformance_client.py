"""The client side of the MCP conformance suite, written with mcpkit's ``Client``.

    MCP_CONFORMANCE_SCENARIO=tools_call python scripts/conformance/conformance_client.py http://localhost:PORT/mcp

The suite (``@modelcontextprotocol/conformance``) starts a mock server per client
scenario and runs this program with the server's URL as its last argument. The
environment says what to do:

* ``MCP_CONFORMANCE_SCENARIO``: the scenario's name;
* ``MCP_CONFORMANCE_PROTOCOL_VERSION``: the revision to speak, pinned as
  ``ClientOptions.protocol_version`` (2025-11-25 and older start with ``initialize``,
  2026-07-28 is stateless);
* ``MCP_CONFORMANCE_CONTEXT``: JSON with scenario data (for example the tool calls to make).

Each scenario does what the suite's mock server expects from a client and nothing
more; any error ends the program with a non-zero status, so a failure is never
hidden. ``scripts/conformance.sh`` runs every client scenario with this program.
The client answers the server's questions like a user who accepts every form as it
is offered (its defaults filled in by mcpkit) and a model that always says the same
thing; the modern era's multi-round-trip requests are driven by ``Client`` itself.
The ``auth/*`` scenarios put an OAuth authorization server in front of the mock server:
the client connects with ``OAuthClientAuth`` (:func:`authorization`) and runs the generic
walk. The user is played by a headless "browser" (:func:`consenting_browser`) that opens
the authorization URL and follows its redirect to the client's loopback listener; the
client credentials of the scenarios that need them come in ``MCP_CONFORMANCE_CONTEXT``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from mcpkit import (
    Client,
    ClientOptions,
    CreateMessageParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    HttpTransport,
    IdJagExchange,
    Implementation,
    LoopbackRedirect,
    OAuthClientAuth,
    OAuthClientMetadata,
    PreRegisteredClient,
    Root,
    SkillVerificationError,
)

Scenario = Callable[[Client, dict[str, Any]], Awaitable[None]]

SAMPLE_VALUES: dict[str, Any] = {"string": "test", "integer": 1, "number": 1, "boolean": True, "object": {}, "array": []}


def sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a tool we know nothing about: a sample value for each required property."""
    properties = schema.get("properties") or {}
    arguments: dict[str, Any] = {}
    for name in schema.get("required") or []:
        prop = properties.get(name) or {}
        arguments[name] = SAMPLE_VALUES.get(str(prop.get("type")), "test")
    return arguments


async def call_every_tool(client: Client) -> None:
    """List the tools (mcpkit leaves out tools with invalid ``x-mcp-header`` annotations)
    and call each one."""
    for tool in (await client.list_tools()).tools:
        await client.call_tool(tool.name, sample_arguments(tool.input_schema))


async def just_connect(client: Client, context: dict[str, Any]) -> None:
    """The handshake (or, in the modern era, nothing) is the whole scenario."""


async def tools_call(client: Client, context: dict[str, Any]) -> None:
    await client.list_tools()
    result = await client.call_tool("add_numbers", {"a": 5, "b": 3})
    if result.is_error:
        raise SystemExit(f"add_numbers failed: {result.content}")


async def sse_retry(client: Client, context: dict[str, Any]) -> None:
    """The server closes the call's SSE stream early; the client must reconnect (after
    the ``retry:`` delay, with ``Last-Event-ID``) to get the result."""
    await client.list_tools()
    await client.call_tool("test_reconnection")


async def list_only(client: Client, context: dict[str, Any]) -> None:
    await client.list_tools()


async def standard_headers(client: Client, context: dict[str, Any]) -> None:
    """One request of every kind, so the server sees the ``Mcp-Method``/``Mcp-Name`` headers of each."""
    await call_every_tool(client)
    for resource in (await client.list_resources()).resources:
        await client.read_resource(resource.uri)
    for prompt in (await client.list_prompts()).prompts:
        await client.get_prompt(prompt.name)


async def context_tool_calls(client: Client, context: dict[str, Any]) -> None:
    """Make exactly the tool calls the scenario's context lists."""
    await client.list_tools()
    for call in context.get("toolCalls") or []:
        await client.call_tool(call["name"], call.get("arguments") or {})


async def schema_round_trip(client: Client, context: dict[str, Any]) -> None:
    """Send the focal tool's input schema back, as received, to the echo tool."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    schema = tools["json_schema_2020_12_tool"].input_schema
    await client.call_tool("json_schema_echo", {"schema": schema})


async def skills_listed(client: Client, context: dict[str, Any]) -> None:
    """A host building its skill registry: every entry listed, nothing of any skill read
    (no skill is loaded)."""
    async for skill in client.iter_skills():
        logging.info("skill %s: %s", skill.uri, skill.frontmatter.get("description"))


async def skills_loaded(client: Client, context: dict[str, Any]) -> None:
    """A host that loads each listed skill and then reads every file its entry lists.
    A skill whose content fails verification is refused (logged) and none of its other
    files is read; the scenario's mock serves one that fails."""
    for entry in await client.list_all_skills():
        try:
            skill = await client.load_skill(entry)
        except SkillVerificationError as exc:
            logging.warning("refused skill %s (%s): %s", exc.uri, exc.reason, exc.message)
            continue
        for path in skill.files or []:
            await client.read_skill_file(skill, path)


async def generic(client: Client, context: dict[str, Any]) -> None:
    """Scenarios without a handler of their own: list the tools and call each one."""
    await call_every_tool(client)


SCENARIOS: dict[str, Scenario] = {
    "initialize": just_connect,
    "tools_call": tools_call,
    "sse-retry": sse_retry,
    "request-metadata": list_only,
    "json-schema-ref-no-deref": list_only,
    "json-schema-2020-12-preservation": schema_round_trip,
    "http-standard-headers": standard_headers,
    "http-custom-headers": context_tool_calls,
    "http-invalid-tool-headers": generic,  # the invalid tools are never listed, so never called
    "sep-2640-client-no-prefetch": skills_listed,
    "sep-2640-client-verify-digest": skills_loaded,
    "sep-2640-client-verify-size": skills_loaded,
    "sep-2640-client-verify-frontmatter": skills_loaded,
}


def accept_as_offered(request: ElicitRequestParams) -> ElicitResult:
    """A user who submits every form untouched: mcpkit fills in the schema's defaults."""
    return ElicitResult(action="accept", content={} if request.mode == "form" else None)


def canned_model(request: CreateMessageParams) -> CreateMessageResult:
    """A model that always gives the same answer."""
    text = "This is a test response from the mcpkit conformance client"
    return CreateMessageResult(
        role="assistant", content={"type": "text", "text": text}, model="mcpkit-test", stop_reason="endTurn"
    )


#: The client ID metadata document URL the suite's authorization servers accept (auth/basic-cimd).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


async def consenting_browser(url: str) -> None:
    """A user who approves at once: open the authorization URL, then follow its redirect
    (to the client's loopback listener, which hands the code to the flow)."""
    async with httpx.AsyncClient(timeout=10) as browser:
        answer = await browser.get(url)
        location = answer.headers.get("location")
        if answer.status_code not in (301, 302, 303, 307) or not location:
            raise SystemExit(f"the authorization endpoint answered HTTP {answer.status_code} without a redirect")
        await browser.get(location)


def authorization(scenario: str, context: dict[str, Any]) -> OAuthClientAuth | None:
    """The OAuth setup of an ``auth/*`` scenario (None for the others)."""
    if not scenario.startswith("auth/"):
        return None
    if scenario == "auth/wif-jwt-bearer":  # a workload identity token, traded for an access token (RFC 7523)
        workload = PreRegisteredClient(context["client_id"])
        return OAuthClientAuth(client=workload, grant="jwt_bearer", assertion=lambda issuer, resource: context["valid_jwt"])
    if scenario == "auth/enterprise-managed-authorization":
        client = PreRegisteredClient(context["client_id"], client_secret=context["client_secret"])
        exchange = IdJagExchange(  # the user's ID token traded at the identity provider (RFC 8693) for an ID-JAG
            client=PreRegisteredClient(context["idp_client_id"]),
            subject_token=context["idp_id_token"],
            token_endpoint=context["idp_token_endpoint"],
        )
        return OAuthClientAuth(client=client, assertion=exchange)
    if scenario.startswith("auth/client-credentials-"):
        client = PreRegisteredClient(
            context["client_id"],
            client_secret=context.get("client_secret"),
            private_key=context.get("private_key_pem"),
            signing_alg=context.get("signing_algorithm"),
        )
        return OAuthClientAuth(client=client, grant="client_credentials")
    pre = None
    if scenario == "auth/pre-registration":
        pre = PreRegisteredClient(context["client_id"], client_secret=context.get("client_secret"))
    metadata = OAuthClientMetadata(client_name="mcpkit-conformance-client", metadata_url=CLIENT_METADATA_URL)
    redirect = LoopbackRedirect(open_url=consenting_browser, timeout=20)
    dpop = scenario.startswith("auth/dpop")  # the mock MCP server takes the DPoP scheme
    return OAuthClientAuth(redirect=redirect, client=pre, metadata=metadata, dpop=dpop)


async def run(url: str, scenario: str, version: str | None, context: dict[str, Any]) -> None:
    options = ClientOptions(
        protocol_version=version,
        client_info=Implementation(name="mcpkit-conformance-client", version="1.0.0"),
        request_timeout=20.0,
        on_elicit=accept_as_offered,
        on_sample=canned_model,
        roots=[Root(uri="file:///tmp/conformance", name="conformance")],
    )
    async with Client(HttpTransport(url, auth=authorization(scenario, context)), options) as client:
        await SCENARIOS.get(scenario, generic)(client, context)


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit("usage: conformance_client.py URL  (scenario in MCP_CONFORMANCE_SCENARIO)")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or None
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    asyncio.run(run(sys.argv[-1], scenario, version, context))


if __name__ == "__main__":
    main()
