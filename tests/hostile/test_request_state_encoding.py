"""A modern-era ``requestState`` written another way than the server wrote it
(docs/interactive.md, "Replays"): appended junk and padding, the standard base64 alphabet,
unused bits set, whitespace. Each spelling must be refused, so that a server remembering the
states it has used recognises a replay however it is spelled; and the way the docs give a
tool author to make a step single-use — remember ``ctx.exchange_id`` — holds against replays.

A real server process (tests/support/servers/hostile_auth.py) runs ``redeem(code)``: it asks for a
confirmation, then redeems the code at most once per exchange.
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.auth import Protected, key_server, protected
from support.wire import modern

pytestmark = pytest.mark.timeout(60)

ALPHABET = string.ascii_uppercase + string.ascii_lowercase + string.digits + "-_"
CONFIRM = {"confirm": {"action": "accept", "content": {}}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Protected]:
    with key_server() as (ks, base):
        ks.active["alice-token"] = {"active": True, "sub": "alice", "scope": "mcp"}
        config = {"verifier": "introspection", "url": f"{base}/introspect"}
        with protected(config, tmp_path_factory.mktemp("state")) as found:
            yield found


def _redeem(server: Protected, code: str, **extra: Any) -> httpx.Response:
    params = {"name": "redeem", "arguments": {"code": code}, **extra}
    body, headers = modern(
        "tools/call",
        params,
        headers={"authorization": "Bearer alice-token"},
        meta={"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}},
    )
    return httpx.post(server.url, json=body, headers=headers, timeout=20)


def _state(server: Protected, code: str) -> str:
    first = _redeem(server, code).json()["result"]
    assert first["resultType"] == "input_required"
    return str(first["requestState"])


def _unused_bits_set(state: str) -> str:
    """``state`` with an unused low bit of the MAC's last character set: the same bytes to a
    lenient decoder (32 bytes are 43 characters, the last one carrying 2 spare bits)."""
    body, mac = state.split(".")
    assert len(mac) == 43
    return f"{body}.{mac[:-1]}{ALPHABET[ALPHABET.index(mac[-1]) ^ 1]}"


SPELLINGS = {
    "junk appended": lambda s: s + "====!!",
    "padding": lambda s: s + "=",
    "padding inside": lambda s: s.replace(".", "==.", 1),
    "a newline inside": lambda s: s[:10] + "\n" + s[10:],
    "a space inside": lambda s: s[:10] + " " + s[10:],
    "the standard alphabet": lambda s: s.replace("-", "+").replace("_", "/"),
    "unused bits set": _unused_bits_set,
}


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_another_spelling_of_a_state_is_refused(server: Protected, spelling: str) -> None:
    code = secrets.token_hex(4)
    state = _state(server, code)
    if spelling == "the standard alphabet":
        while "-" not in state and "_" not in state:  # most states have one; draw until this one does
            state = _state(server, code)
    variant = SPELLINGS[spelling](state)
    assert variant != state
    resp = _redeem(server, code, requestState=variant, inputResponses=CONFIRM)
    assert resp.status_code == 400, f"{spelling}: {resp.text}"
    error = resp.json()["error"]
    assert error["code"] == -32602
    assert "requestState is malformed" in error["message"]
    done = _redeem(server, code, requestState=state, inputResponses=CONFIRM).json()["result"]
    assert done["content"][0]["text"] == f"redeemed {code}"  # the state as written is still good


def test_a_replayed_state_reaches_the_handler_which_can_refuse_it(server: Protected) -> None:
    """Within its TTL a state can be presented again (the documented semantics), so a
    one-time step checks ``ctx.exchange_id``: the replay is refused by the tool, and a new
    call is a new exchange."""
    code = secrets.token_hex(4)
    state = _state(server, code)
    first = _redeem(server, code, requestState=state, inputResponses=CONFIRM).json()["result"]
    assert first["content"][0]["text"] == f"redeemed {code}"
    replay = _redeem(server, code, requestState=state, inputResponses=CONFIRM).json()["result"]
    assert replay["isError"] is True
    assert replay["content"][0]["text"] == "this confirmation was used already"
    again = _redeem(server, code, requestState=_state(server, code), inputResponses=CONFIRM).json()["result"]
    assert again["content"][0]["text"] == f"redeemed {code}"
