"""The ``MCPKIT_*`` variables read into settings (mcpkit.server.environment): each parsed
and checked, an empty one unset, a bad one refused naming it. That ``Server.run`` and
``mcpkit run`` serve by them is tests/e2e/http/test_environment_settings.py's."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit.server.environment import PREFIX, VARIABLES, from_environment


def test_nothing_set_sets_nothing() -> None:
    settings = from_environment({"PATH": "/bin", "MCPKIT_TESTS_CHILD_COVERAGE": "x", "MCPKIT_PORT": ""})
    assert (settings.run, settings.server, settings.http, settings.uvicorn, settings.read) == ({}, {}, {}, {}, ())


def test_every_variable_lands_where_it_says() -> None:
    environ = {
        "MCPKIT_TRANSPORT": "HTTP",
        "MCPKIT_HOST": " 0.0.0.0 ",
        "MCPKIT_PORT": "9001",
        "MCPKIT_PATH": "/svc",
        "MCPKIT_LOG_LEVEL": "Info",
        "MCPKIT_ERAS": "legacy",
        "MCPKIT_TOOL_TIMEOUT": "2.5",
        "MCPKIT_ASK_TIMEOUT": "60",
        "MCPKIT_MASK_TOOL_ERRORS": "yes",
        "MCPKIT_PAGE_SIZE": "50",
        "MCPKIT_MAX_MESSAGE_SIZE": "1_048_576",
        "MCPKIT_MAX_IN_FLIGHT": "8",
        "MCPKIT_MAX_URI_LENGTH": "2048",
        "MCPKIT_MAX_LISTENS": "10",
        "MCPKIT_SHUTDOWN_GRACE": "0.5",
        "MCPKIT_ALLOWED_HOSTS": "mcp.example.com, localhost ,",
        "MCPKIT_MAX_BODY_SIZE": "65536",
        "MCPKIT_MAX_SESSIONS": "100",
        "MCPKIT_MAX_CONNECTIONS": "64",
    }
    assert set(environ) == {PREFIX + name for name in VARIABLES}  # the table is all tested
    settings = from_environment(environ)
    assert settings.run == {"transport": "http", "host": "0.0.0.0", "port": 9001, "path": "/svc", "log_level": "info"}
    assert settings.server == {
        "eras": "legacy", "tool_timeout": 2.5, "ask_timeout": 60.0, "mask_tool_errors": True, "page_size": 50,
        "max_message_size": 1_048_576, "max_in_flight": 8, "max_uri_length": 2048, "max_listens": 10,
        "shutdown_grace": 0.5,
    }  # fmt: skip
    assert settings.http == {"allowed_hosts": ["mcp.example.com", "localhost"], "max_body_size": 65536, "max_sessions": 100}
    assert settings.uvicorn == {"max_connections": 64}
    assert settings.read[0] == "MCPKIT_TRANSPORT=HTTP"
    assert len(settings.read) == len(environ)


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        ("TRANSPORT", "sse", "is none of stdio, http"),
        ("PORT", "abc", "is not a port number"),
        ("PORT", "70000", "is not a port number (0 to 65535)"),
        ("HOST", "  ", "is empty"),
        ("LOG_LEVEL", "loud", "is none of critical, error, warning, info, debug, trace"),
        ("ERAS", "both", "is none of dual, modern, legacy"),
        ("TOOL_TIMEOUT", "soon", "is not a number of seconds"),
        ("TOOL_TIMEOUT", "0", "must be a positive, finite number of seconds"),
        ("ASK_TIMEOUT", "inf", "must be a positive, finite number of seconds"),
        ("ASK_TIMEOUT", "nan", "must be a positive, finite number of seconds"),
        ("MASK_TOOL_ERRORS", "maybe", "is not a yes or a no (1, true, yes, on, or 0, false, no, off)"),
        ("PAGE_SIZE", "1.5", "is not a whole number"),
        ("MAX_IN_FLIGHT", "0", "must be positive"),
        ("ALLOWED_HOSTS", ", ,", "names nothing"),
    ],
)
def test_a_bad_value_is_refused_naming_the_variable(name: str, value: str, why: str) -> None:
    with pytest.raises(ValueError, match=f"^{PREFIX}{name}=") as caught:
        from_environment({PREFIX + name: value})
    assert str(caught.value) == f"{PREFIX}{name}={value!r} {why}"


@pytest.mark.parametrize(
    ("text", "expected"), [("1", True), ("ON", True), ("true", True), ("0", False), ("off", False), ("No", False)]
)
def test_flags(text: str, expected: bool) -> None:
    assert from_environment({"MCPKIT_MASK_TOOL_ERRORS": text}).server == {"mask_tool_errors": expected}


def test_the_port_may_be_zero() -> None:
    """0 asks the system for a free port, as uvicorn's own --port 0 does."""
    settings: Any = from_environment({"MCPKIT_PORT": "0"})
    assert settings.run == {"port": 0}
