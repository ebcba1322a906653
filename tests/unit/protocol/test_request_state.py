"""Sealing and opening ``requestState`` (src/mcpkit/protocol/request_state.py), in process: the one
spelling a state has, the exchange id it carries from round to round, and what it is bound
to. Over a real server: tests/hostile/test_request_state_encoding.py."""

from __future__ import annotations

import pytest

from mcpkit import McpError
from mcpkit.protocol.request_state import StateSealer, new_exchange_id

SEALER = StateSealer(b"k" * 32, 60)


def test_a_state_opens_with_its_answers_and_exchange_until_it_expires() -> None:
    exchange = new_exchange_id()
    token = SEALER.seal("d1", {"q": [1, "yes"]}, exchange=exchange, subject="p", now=1000)
    opened = SEALER.open(token, "d1", subject="p", now=1059)
    assert (opened.answers, opened.exchange) == ({"q": [1, "yes"]}, exchange)
    assert SEALER.open(token, "d1", subject="p", now=1059) == opened  # as often as it is presented
    for digest, subject, now, why in (
        ("d2", "p", 1000, "another request"),
        ("d1", "q", 1000, "another principal"),
        ("d1", "p", 1061, "expired"),
    ):
        with pytest.raises(McpError, match=why):
            SEALER.open(token, digest, subject=subject, now=now)


def test_exchange_ids_are_random() -> None:
    assert len({new_exchange_id() for _ in range(1000)}) == 1000


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
    with pytest.raises(McpError, match="malformed"):
        SEALER.open(variant, "d", now=0)
