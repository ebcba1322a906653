"""Sealing and opening ``requestState`` (src/mcpkit/protocol/request_state.py), in process: the one
spelling a state has, the exchange id it carries from round to round, and what it is bound
to. Over a real server: tests/hostile/test_request_state_encoding.py."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit import Context, McpError, Server
from mcpkit.protocol.request_state import StateSealer, new_exchange_id, request_digest
from support.serving import serve_in_thread
from support.wire import modern

SEALER = StateSealer(b"k" * 32, 60)

MALFORMED = "is malformed"
ALTERED = "failed its integrity check (altered, or sealed with another key)"
ANOTHER_REQUEST = "belongs to another request"
ANOTHER_PRINCIPAL = "belongs to another principal"
EXPIRED = "has expired; send the request again without it"


@contextlib.contextmanager
def refused(why: str) -> Iterator[None]:
    """The block raises the -32602 a client gets, with exactly this message."""
    with pytest.raises(McpError) as caught:
        yield
    assert (caught.value.code, caught.value.message) == (-32602, f"Invalid params: requestState {why}")


def test_a_state_opens_with_its_answers_and_exchange_until_it_expires() -> None:
    exchange = new_exchange_id()
    token = SEALER.seal("d1", {"q": [1, "yes"]}, exchange=exchange, subject="p", now=1000)
    opened = SEALER.open(token, "d1", subject="p", now=1059)
    assert (opened.answers, opened.exchange) == ({"q": [1, "yes"]}, exchange)
    assert SEALER.open(token, "d1", subject="p", now=1059) == opened  # as often as it is presented
    for digest, subject, now, why in (
        ("d2", "p", 1000, ANOTHER_REQUEST),
        ("d1", "q", 1000, ANOTHER_PRINCIPAL),
        ("d1", None, 1000, ANOTHER_PRINCIPAL),
        ("d1", "p", 1061, EXPIRED),
    ):
        with refused(why):
            SEALER.open(token, digest, subject=subject, now=now)


def test_exchange_ids_are_random() -> None:
    ids = {new_exchange_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert {len(_unb64(i)) for i in ids} == {16}  # 128 bits, as Context.exchange_id says
    assert all(_b64(_unb64(i)) == i for i in ids)


def test_a_state_is_written_in_unpadded_url_safe_base64() -> None:
    for pad in range(6):  # bodies of each length modulo 3: no padding to strip, or one or two "="
        token = SEALER.seal("d", {"p": "y" * pad}, exchange="e", now=0)
        body = json.dumps({"a": {"p": "y" * pad}, "d": "d", "e": "e", "v": 1, "x": 60}, separators=(",", ":")).encode()
        assert token == _b64(body) + "." + _b64(hmac.new(b"k" * 32, body, hashlib.sha256).digest())
        assert SEALER.open(token, "d", now=0).answers == {"p": "y" * pad}


def test_any_canonical_spelling_is_read_as_written() -> None:
    """A body in its one canonical spelling, whatever it ends with (here "X"), is decoded
    and goes on to the integrity check, which refuses it: not a matter of spelling."""
    mac = _b64(bytes(32))
    for body in ("AAAX", "AAAA", "AAE", "AQ", "____"):
        assert _b64(_unb64(body)) == body
        with refused(ALTERED):
            SEALER.open(f"{body}.{mac}", "d", now=0)


@pytest.mark.parametrize(
    "respell",
    [
        lambda t: t + "====!!",
        lambda t: t + "=",
        lambda t: t.replace(".", "=.", 1),
        lambda t: " " + t,
        lambda t: t.replace("-", "+").replace("_", "/") if ("-" in t or "_" in t) else t + "+",
        lambda t: t[:5] + "\n" + t[5:],
        lambda t: (
            t[:-1]
            + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".index(t[-1]) ^ 1
            ]
        ),
        lambda t: t + "é",
    ],
)
def test_only_the_spelling_the_server_wrote_opens(respell: object) -> None:
    token = SEALER.seal("d", {}, exchange=new_exchange_id(), now=0)
    variant = respell(token)  # type: ignore[operator]
    assert variant != token
    with refused(MALFORMED):
        SEALER.open(variant, "d", now=0)


# --- what the state is bound to, and its bounds ------------------------------------------------------

KEY = b"a key every node of the bank shares"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _forge(payload: dict[str, Any], key: bytes = KEY) -> str:
    """A state with ``payload`` signed with ``key`` as the format says (HMAC-SHA256 over the
    JSON body), written here without mcpkit: what someone holding the key could send."""
    body = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
    return _b64(body) + "." + _b64(hmac.new(key, body, hashlib.sha256).digest())


def _payload(state: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(_unb64(state.split(".")[0]))
    return loaded


def test_the_mac_is_all_of_hmac_sha256_and_every_bit_of_it_counts() -> None:
    token = SEALER.seal("d", {"q": 1}, exchange=new_exchange_id(), now=0)
    body, mac = token.split(".")
    assert _unb64(mac) == hmac.new(b"k" * 32, _unb64(body), hashlib.sha256).digest()  # 32 bytes, not a prefix
    for cut in (_unb64(mac)[:4], _unb64(mac)[:16], _unb64(mac)[:31], _unb64(mac)[:-1] + bytes([_unb64(mac)[-1] ^ 1])):
        with refused(ALTERED):
            SEALER.open(f"{body}.{_b64(cut)}", "d", now=0)
    with refused(ALTERED):  # another key of the same length
        StateSealer(b"K" * 32, 60).open(token, "d", now=0)


@pytest.mark.parametrize("key", [b"", b"x", b"x" * 15])
def test_a_short_state_key_is_refused(key: bytes) -> None:
    with pytest.raises(ValueError, match=r"^the requestState key must be at least 16 bytes$"):
        StateSealer(key, 60)
    with pytest.raises(ValueError, match=r"^the requestState key must be at least 16 bytes$"):
        Server("short", state_key=key)
    assert StateSealer(key + b"y" * (16 - len(key)), 60).ttl == 60  # 16 bytes will do


@pytest.mark.parametrize("ttl", [0, -1, -0.5, float("nan")])
def test_a_ttl_that_is_not_positive_is_refused(ttl: float) -> None:
    with pytest.raises(ValueError, match=r"^the requestState ttl must be positive$"):
        StateSealer(b"k" * 16, ttl)


def test_a_state_lives_exactly_its_ttl() -> None:
    token = StateSealer(b"k" * 16, 0.5).seal("d", {}, exchange="e", now=1000)
    assert _payload(token)["x"] == 1000  # int(1000.5)
    token = SEALER.seal("d", {}, exchange="e", now=1000.7)
    assert _payload(token)["x"] == 1060
    assert SEALER.open(token, "d", now=1060).exchange == "e"  # the last instant it opens
    with refused(EXPIRED):
        SEALER.open(token, "d", now=1060.001)


def test_a_state_without_an_expiry_or_with_another_version_is_refused() -> None:
    sealer = StateSealer(KEY, 60)
    good = {"v": 1, "d": "d", "a": {}, "e": "e", "x": 2000}
    assert sealer.open(_forge(good), "d", now=1000).exchange == "e"
    for change, why in (
        ({"v": 2}, ANOTHER_REQUEST),
        ({"v": None}, ANOTHER_REQUEST),
        ({"v": "1"}, ANOTHER_REQUEST),
        ({"x": None}, EXPIRED),
        ({"x": "2000"}, EXPIRED),
        ({"x": 2000.5}, EXPIRED),
    ):
        with refused(why):
            sealer.open(_forge({**good, **change}), "d", now=1000)
    without = {k: v for k, v in good.items() if k != "v"}
    with refused(ANOTHER_REQUEST):
        sealer.open(_forge(without), "d", now=1000)


def test_a_state_from_before_exchange_ids_opens_with_one_named_by_its_mac() -> None:
    sealer = StateSealer(KEY, 60)
    token = _forge({"v": 1, "d": "d", "a": {"q": 1}, "x": 2000})
    opened = sealer.open(token, "d", now=1000)
    assert opened == sealer.open(token, "d", now=1000)
    assert opened.exchange == _b64(_unb64(token.split(".")[1])[:16])
    assert opened.answers == {"q": 1}
    assert sealer.open(_forge({"v": 1, "d": "d", "a": [1], "e": "e", "x": 2000}), "d", now=1000).answers == {}


def _state_of_length(length: int) -> str:
    """A well-signed state exactly ``length`` characters long."""
    pad = 0
    while True:
        token = _forge({"v": 1, "d": "d", "a": {"p": "x" * pad}, "e": "e", "x": 2000})
        if len(token) >= length:
            assert len(token) == length, (len(token), length)
            return token
        pad += max(1, (length - len(token)) * 3 // 4 - 1)


def test_states_are_bounded_to_one_mebibyte() -> None:
    sealer = StateSealer(KEY, 60)
    assert sealer.open(_state_of_length(1 << 20), "d", now=1000).exchange == "e"
    with refused(MALFORMED):
        sealer.open(_state_of_length((1 << 20) + 4), "d", now=1000)
    for not_a_string in (None, 12, ["a.b"], {"a": "b"}):
        with refused(MALFORMED):
            sealer.open(not_a_string, "d", now=1000)
    for dots in ("a", "a.b.c", "..", "e30.e30.e30"):
        with refused(MALFORMED):
            sealer.open(dots, "d", now=1000)


def test_the_request_digest_covers_the_method_and_every_salient_param() -> None:
    base = request_digest("tools/call", {"name": "transfer", "arguments": {"amount": 1}})
    assert len(base) == 32
    same = {
        "name": "transfer",
        "arguments": {"amount": 1},
        "_meta": {"progressToken": 1},
        "inputResponses": {"q": {}},
        "requestState": "s",
    }
    assert request_digest("tools/call", same) == base
    for method, params in (
        ("tools/call", {"name": "transfer", "arguments": {"amount": 1000}}),
        ("tools/call", {"name": "transfer", "arguments": {"amount": 1, "to": "mallory"}}),
        ("tools/call", {"name": "refund", "arguments": {"amount": 1}}),
        ("prompts/get", {"name": "transfer", "arguments": {"amount": 1}}),
        ("tools/call", {"name": "transfer", "arguments": {"amount": 1}, "task": {}}),
    ):
        assert request_digest(method, params) != base, (method, params)


# --- over real HTTP: a state for one request does not carry another ----------------------------------

LEDGER: list[int] = []


def _bank() -> Server:
    server = Server("bank", state_key=KEY)

    @server.tool
    async def transfer(ctx: Context, amount: int) -> str:
        """Confirm, then a one-time code; only then is ``amount`` sent."""
        form: dict[str, Any] = {"type": "object", "properties": {}}
        confirmed = await ctx.elicit(f"Send {amount}?", form, key="confirm")
        if confirmed.action != "accept":
            return "not sent"
        await ctx.elicit("Your one-time code?", form, key="otp")
        LEDGER.append(amount)
        return f"sent {amount}"

    return server


@pytest.fixture(scope="module")
def bank() -> Iterator[str]:
    with serve_in_thread(_bank().asgi_app()) as port:
        yield f"http://127.0.0.1:{port}/mcp"


ACCEPT = {"action": "accept", "content": {}}


def _transfer(url: str, amount: int, **extra: Any) -> dict[str, Any]:
    params = {"name": "transfer", "arguments": {"amount": amount}, **extra}
    body, headers = modern("tools/call", params, meta={"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})
    reply: dict[str, Any] = httpx.post(url, json=body, headers=headers, timeout=20).json()
    return reply


def _confirmed(url: str, amount: int) -> str:
    """The state after the user confirmed sending ``amount``: it records the confirmation
    and waits for the one-time code."""
    first = _transfer(url, amount)["result"]
    assert list(first["inputRequests"]) == ["confirm"]
    second = _transfer(url, amount, requestState=first["requestState"], inputResponses={"confirm": ACCEPT})["result"]
    assert list(second["inputRequests"]) == ["otp"]
    return str(second["requestState"])


@pytest.mark.e2e
def test_a_confirmation_for_one_amount_does_not_send_another(bank: str) -> None:
    state = _confirmed(bank, 1)
    LEDGER.clear()
    stolen = _transfer(bank, 1000, requestState=state, inputResponses={"otp": ACCEPT})
    assert stolen["error"]["code"] == -32602
    assert "requestState belongs to another request" in stolen["error"]["message"]
    assert LEDGER == []
    done = _transfer(bank, 1, requestState=state, inputResponses={"otp": ACCEPT})["result"]
    assert done["content"][0]["text"] == "sent 1"
    assert LEDGER == [1]


@pytest.mark.e2e
def test_a_state_with_its_mac_cut_or_its_version_changed_is_refused(bank: str) -> None:
    state = _confirmed(bank, 5)
    body, mac = state.split(".")
    for variant in (f"{body}.{_b64(_unb64(mac)[:4])}", f"{body}.{_b64(_unb64(mac)[:16])}"):
        refused = _transfer(bank, 5, requestState=variant, inputResponses={"otp": ACCEPT})
        assert "requestState failed its integrity check" in refused["error"]["message"]
    future = _forge({**_payload(state), "v": 2})  # signed with the key, but not a format this server reads
    refused = _transfer(bank, 5, requestState=future, inputResponses={"otp": ACCEPT})
    assert refused["error"]["code"] == -32602
    assert "requestState belongs to another request" in refused["error"]["message"]
    huge = _forge({**_payload(state), "pad": "x" * (1 << 20)})  # well signed, over the bound
    refused = _transfer(bank, 5, requestState=huge, inputResponses={"otp": ACCEPT})
    assert "requestState is malformed" in refused["error"]["message"]
    LEDGER.clear()
    assert _transfer(bank, 5, requestState=state, inputResponses={"otp": ACCEPT})["result"]["content"][0]["text"] == "sent 5"
    assert LEDGER == [5]
