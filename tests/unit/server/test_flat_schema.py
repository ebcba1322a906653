"""The argument validator's fast path and its plan (src/mcpkit/server/flat_schema.py).

``flat_plan`` turns an object schema of plain properties into a table: the Python types a
property's value may have, the strings it may be, or its sub-schema for the full check.
The plan decides what the fast path vouches for without the full check, so a plan that
says too much lets a tool run with arguments its schema refuses; one that says too little
only sends more calls to the full check. The first are pinned through a server, as the
caller of a tool sees them; the plan itself is pinned for each kind of property schema.
"""

from __future__ import annotations

from typing import Any, Literal

import pytest

from mcpkit import Client, McpError, Server
from mcpkit.server.flat_schema import flat_plan
from mcpkit.server.schema_subset import ANNOTATIONS
from mcpkit.server.validate import _Simple, compile_schema

NONE = type(None)
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def plan_of(schema: Any) -> Any:
    return flat_plan(schema, ANNOTATIONS)


def check_of(sub: Any) -> Any:
    """The fast path's check of a property whose schema is ``sub``."""
    plan = plan_of({"type": "object", "properties": {"p": sub}})
    assert plan is not None
    return plan[0]["p"]


# --- what a tool's caller sees ------------------------------------------------------------------


async def test_a_tool_never_runs_with_arguments_its_schema_refuses() -> None:
    # The schema of add (an open object: other names are allowed) takes the fast path.
    server = Server("paint", "1.0")
    ran: list[dict[str, Any]] = []

    @server.tool
    def add(n: int, color: Literal["red", "blue"]) -> str:
        ran.append({"n": n, "color": color})
        return f"{n} {color}"

    async with Client(server) as client:
        done = await client.call_tool("add", {"extra": 0, "n": 1, "color": "red"})
        assert not done.is_error
        assert ran == [{"n": 1, "color": "red"}]
        prefix = "Invalid arguments for tool add: "
        refused = [
            ({"n": 1, "color": "green"}, 'argument \'color\': "green" is not one of ["red","blue"]'),
            ({"n": 1, "color": 3}, "argument 'color': 3 is not of type \"string\""),
            # a name the schema does not declare comes first: what follows is still checked
            ({"extra": 0, "n": "not a number", "color": "red"}, 'argument \'n\': "not a number" is not of type "integer"'),
            ({"extra": 0, "n": 1, "color": "green"}, 'argument \'color\': "green" is not one of ["red","blue"]'),
            ({"n": True, "color": "red"}, "argument 'n': true is not of type \"integer\""),
            ({"color": "red"}, "missing required argument 'n'"),
        ]
        for arguments, says in refused:
            with pytest.raises(McpError) as info:
                await client.call_tool("add", arguments)
            assert (info.value.code, info.value.message) == (-32602, prefix + says), arguments
    assert ran == [{"n": 1, "color": "red"}]


@pytest.mark.parametrize(
    ("extra", "good", "bad", "says"),
    [
        ({"type": "string"}, {"x": "s"}, {"x": 1}, "argument 'x': 1 is not of type \"string\""),
        (False, {"n": 1}, {"x": 1}, "unexpected argument 'x'"),
    ],
)
def test_other_names_follow_additional_properties(extra: Any, good: Any, bad: Any, says: str) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": extra}
    validator = compile_schema(schema, trusted=True)
    assert validator.describe(good) is None
    assert validator.describe(bad) == says


def test_a_value_too_deep_for_a_recursive_property_is_not_vouched_for() -> None:
    node = {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}
    schema = {"type": "object", "properties": {"tree": {"$ref": "#/$defs/node"}}, "$defs": {"node": node}}
    validator = compile_schema(schema, trusted=True)
    assert isinstance(validator, _Simple)
    assert validator._plan is not None
    deep: dict[str, Any] = {}
    for _ in range(5000):
        deep = {"next": deep}
    assert validator.describe({"tree": {"next": {}}}) is None
    assert validator.describe({"tree": deep}) == "nested too deeply to validate"


def test_the_fast_path_alone_vouches_for_plain_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    # What the fast path is for: a call with plain arguments costs no walk of the schema.
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "s": {"type": "string", "description": "text"},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "opt": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None},
        },
        "required": ["n", "mode"],
    }
    closed = {**schema, "additionalProperties": False}
    valid = [
        {"n": 1, "mode": "a"},
        {"n": -2, "x": 1.5, "s": "t", "mode": "b", "opt": None},
        {"n": 0, "x": 3, "mode": "a", "opt": -0.25},
    ]
    for which in (schema, closed):
        validator = compile_schema(which, trusted=True)
        assert isinstance(validator, _Simple)

        def full_check(*args: Any) -> str | None:
            raise AssertionError(f"the full check ran: {args}")

        monkeypatch.setattr(validator, "_check", full_check)
        for arguments in valid:
            assert validator.describe(arguments) is None
        if which is schema:
            assert validator.describe({"n": 1, "mode": "a", "other": [1]}) is None


def test_a_property_left_to_the_full_check_is_checked_on_its_own_value() -> None:
    # A property schema without "type" accepts null: a check of anything but the value
    # itself would vouch for every value.
    schema = {"type": "object", "properties": {"p": {"maxLength": 3}, "q": {"minimum": 0}}}
    validator = compile_schema(schema, trusted=True)
    assert validator.describe({"p": "abc", "q": 1}) is None
    assert validator.describe({"p": "abcd"}) == "argument 'p': \"abcd\" is longer than 3 characters"
    assert validator.describe({"q": -1}) == "argument 'q': -1 is less than the minimum of 0"


# --- the plan -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sub", "check"),
    [
        ({"type": "string"}, (str,)),
        ({"type": "integer", "description": "how many", "default": 1}, (int,)),
        ({"type": "number"}, (int, float)),
        ({"type": ["string", "null"]}, (str, NONE)),
        ({"anyOf": [{"type": "number"}, {"type": "null"}]}, (int, float, NONE)),
        ({"anyOf": [{"type": "boolean", "title": "b"}, {"type": ["array", "object"]}]}, (bool, list, dict)),
        ({"type": "string", "enum": ["a", "b"]}, frozenset({"a", "b"})),
        ({"enum": ["a", "b"], "type": "string", "description": "d"}, frozenset({"a", "b"})),
    ],
)
def test_a_plain_property_is_checked_by_its_python_types_or_its_strings(sub: Any, check: Any) -> None:
    assert check_of(sub) == check
    assert type(check_of(sub)) is type(check)


@pytest.mark.parametrize(
    "sub",
    [
        {},
        {"type": "string", "minLength": 1},
        # both must hold: a string that is also null is nothing, not either of the two
        {"type": "string", "anyOf": [{"type": "null"}]},
        {"anyOf": [{"type": "string"}, {"minLength": 1}]},
        {"anyOf": [{"type": "string"}, {}]},
        {"type": "string", "$schema": DIALECT},  # a property with a dialect of its own
        {"anyOf": [{"type": "string", "$schema": DIALECT}]},
        {"type": "string", "enum": ["a", 1]},  # not only strings
        {"type": "integer", "enum": [1, 2]},
        {"type": "integer", "enum": ["a"]},  # no string is an integer: the full check refuses them all
        {"type": "string", "enum": ["a"], "minLength": 2},
        {"enum": ["a", "b"]},
    ],
)
def test_any_other_property_goes_to_the_full_check(sub: Any) -> None:
    assert check_of(sub) is sub


def test_the_plan_has_the_required_names_and_whether_others_are_refused() -> None:
    assert plan_of({"type": "object"}) == ({}, (), False)
    assert plan_of({"type": "object", "required": ["a", "b"], "additionalProperties": False}) == ({}, ("a", "b"), True)
    assert plan_of({"type": "object", "additionalProperties": True}) == ({}, (), False)
    # every keyword an object schema of plain properties may have, at once
    full = {"type": "object", "properties": {}, "required": [], "additionalProperties": False, "$defs": {}}
    full |= dict.fromkeys(ANNOTATIONS - {"$schema"}, "x") | {"$schema": DIALECT}
    assert plan_of(full) == ({}, (), True)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string"},
        {"properties": {"a": {"type": "string"}}},  # no "type": "object"
        {"type": ["object", "null"], "properties": {}},
        {"type": "object", "minProperties": 1},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "properties": {"a": True}},  # a boolean schema: left to the full check
        {"type": "object", "properties": {"a": False}},
        True,
    ],
)
def test_other_schemas_have_no_plan(schema: Any) -> None:
    assert plan_of(schema) is None
    if isinstance(schema, dict) and schema.get("type") == "object":
        assert _Simple(schema)._plan is None
