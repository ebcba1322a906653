"""The checks a skill's entry and its ``SKILL.md`` go through before anything of it is
used (mcpkit.client.skills), as plain function calls: the frontmatter parsed and compared
field by field, and the entry's manifest checked before any read. Over HTTP, with what
the client sends: tests/e2e/http/test_skills_client.py."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from mcpkit import Skill, SkillResource, SkillVerificationError
from mcpkit.client.skills import checked_manifest, compare_frontmatter, parse_frontmatter
from mcpkit.protocol.skills import digest_of

URI = "skill://acme/refunds/SKILL.md"


def parsed(text: str) -> dict[str, Any]:
    return parse_frontmatter(text, URI)[0]


def test_the_frontmatter_and_the_body_are_split_at_the_second_rule() -> None:
    text = "\ufeff---\r\nname: refunds\r\ndescription: d\r\n---\r\n# Body\r\n---\r\nmore\r\n"
    frontmatter, body = parse_frontmatter(text, URI)
    assert frontmatter == {"name": "refunds", "description": "d"}
    assert body == "# Body\r\n---\r\nmore\r\n"


@pytest.mark.parametrize(
    "text",
    ["name: x\n", "", "---\nname: x\n", "---\n- a\n- b\n---\n", "---\nname: [unclosed\n---\n", "---\n---\n"],
    ids=["no-rule", "empty", "unclosed", "a-list", "not-yaml", "nothing"],
)
def test_a_skill_md_without_a_mapping_frontmatter_is_refused(text: str) -> None:
    with pytest.raises(SkillVerificationError) as refused:
        parse_frontmatter(text, URI)
    assert refused.value.reason == "frontmatter"
    assert refused.value.uri == URI


def test_dates_stay_the_strings_they_were_written_as() -> None:
    assert parsed("---\ncreated: 2024-01-01\nwhen: 2024-01-01 10:00:00\n---\n") == {
        "created": "2024-01-01",
        "when": "2024-01-01 10:00:00",
    }


@pytest.mark.parametrize(
    ("yaml", "entry"),
    [
        ("a: 1\n", {"a": 1}),
        ("a: 1.5\n", {"a": 1.5}),
        ("a: 2\n", {"a": 2.0}),
        ("a: true\n", {"a": True}),
        ("a: null\n", {"a": None}),
        ("a: {b: [1, x, {c: d}]}\n", {"a": {"b": [1, "x", {"c": "d"}]}}),
        ("1: one\nnull: x\nfalse: f\n", {"1": "one", "null": "x", "false": "f"}),  # keys as JSON spells them
    ],
)
def test_equal_frontmatters_pass(yaml: str, entry: dict[str, Any]) -> None:
    compare_frontmatter(parsed(f"---\n{yaml}---\n"), entry, URI)


@pytest.mark.parametrize(
    ("yaml", "entry", "field"),
    [
        ("a: 1\n", {"a": True}, "a"),  # a boolean is not a number
        ("a: true\n", {"a": 1}, "a"),
        ("a: '1'\n", {"a": 1}, "a"),
        ("a: 1\n", {"a": 1, "b": 2}, "b"),  # a field only in the entry
        ("a: 1\nb: 2\n", {"a": 1}, "b"),  # a field only in SKILL.md
        ("a: {b: 1}\n", {"a": {"b": 1, "c": 2}}, "a"),
        ("a: [1, 2]\n", {"a": [1]}, "a"),
        ("a: [1, 2]\n", {"a": [2, 1]}, "a"),
        ("a: ~\n", {"a": ""}, "a"),
        ("a: !!binary aGk=\n", {"a": "aGk="}, "a"),  # nothing JSON could hold
    ],
)
def test_any_difference_is_refused_and_named(yaml: str, entry: dict[str, Any], field: str) -> None:
    with pytest.raises(SkillVerificationError, match=f"'{field}'") as refused:
        compare_frontmatter(parsed(f"---\n{yaml}---\n"), entry, URI)
    assert refused.value.reason == "frontmatter"


def test_a_frontmatter_of_aliases_too_large_to_compare_is_refused() -> None:
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for level in "bcdefg":
        previous = chr(ord(level) - 1)
        laughs += f"{level}: &{level} [*{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}]\n"
    frontmatter = parsed(f"---\n{laughs}---\n")  # small as text and as objects (shared), 6**6 * 10 nodes as a tree
    with pytest.raises(SkillVerificationError):
        compare_frontmatter(frontmatter, frontmatter, URI)
    recursive = parsed("---\na: &a [*a]\n---\n")  # a list that holds itself: endless
    with pytest.raises(SkillVerificationError):
        compare_frontmatter(recursive, recursive, URI)


def entry(resources: Any, name: str = "refunds", uri: str = URI) -> Skill:
    return Skill(uri=uri, frontmatter={"name": name, "description": "d"}, resources=resources)


def item(uri: str = URI, data: bytes = b"x", size: int | None = None, digest: str | None = None) -> SkillResource:
    return SkillResource(uri=uri, digest=digest or digest_of(data), size=len(data) if size is None else size)


def test_a_sound_manifest_is_the_files_by_uri() -> None:
    files = [item(), item("skill://acme/refunds/a/b.md")]
    assert checked_manifest(entry(files), allow_dynamic=False) == {f.uri: f for f in files}
    assert checked_manifest(entry("dynamic"), allow_dynamic=True) is None


@pytest.mark.parametrize(
    ("skill", "reason"),
    [
        (entry([item("skill://acme/refunds/other.md")]), "entry"),  # SKILL.md not listed
        (entry([item(), item()]), "entry"),  # listed twice
        (entry([item(), item("skill://acme/other/x.md")]), "entry"),  # outside the skill
        (entry([item(), item("skill://acme/refundsx/x.md")]), "entry"),  # a sibling sharing the prefix
        (entry([item(digest="sha256:ABC")]), "entry"),
        (entry([item(size=-1)]), "entry"),
        (entry([item()], name="other"), "entry"),  # the name is not the path's last segment
        (entry([item("skill://acme/Bad/SKILL.md")], name="Bad", uri="skill://acme/Bad/SKILL.md"), "entry"),
        (entry([item()], uri="skill://acme/refunds/README.md"), "entry"),
        (entry("dynamic"), "dynamic"),
        (entry([item(), *(item(f"skill://acme/refunds/{i}") for i in range(512))]), "limits"),
        (entry([item(), item("skill://acme/refunds/big", size=16 * 1024 * 1024)]), "limits"),
    ],
)
def test_an_unsound_manifest_is_refused_before_any_read(skill: Skill, reason: str) -> None:
    with pytest.raises(SkillVerificationError) as refused:
        checked_manifest(skill, allow_dynamic=False)
    assert refused.value.reason == reason


def test_the_limits_themselves_are_accepted() -> None:
    files = [item(), *(item(f"skill://acme/refunds/{i}", b"") for i in range(511))]
    assert len(checked_manifest(entry(files), allow_dynamic=False) or {}) == 512
    whole = [item(size=1), item("skill://acme/refunds/big", size=16 * 1024 * 1024 - 1)]
    assert checked_manifest(entry(whole), allow_dynamic=False) is not None


def test_without_pyyaml_loading_says_which_extra_to_install() -> None:
    code = (
        "import sys; sys.modules['yaml'] = None\n"
        "from mcpkit.client.skills import parse_frontmatter\n"
        "try:\n    parse_frontmatter('---\\nname: x\\n---\\n')\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert "pip install 'mcpkit[skills]'" in done.stdout


R = "skill://acme/refunds/"


@pytest.mark.parametrize(
    "uri",
    [
        R + "../other/secret.md",
        R + "%2e%2e/%2e%2e/etc/passwd",
        R + "%2E%2E/x",
        R + "a//b",
        R + "./ok.md",
        R + "%2e/ok.md",
        R + "a/",
        R + "a%2Fb",
        R + "a%5Cb",
        R + "x?q=1",
        R + "x#f",
        R + "%ff.md",
    ],
)
def test_a_file_uri_that_is_not_plain_segments_under_the_root_is_refused(uri: str) -> None:
    with pytest.raises(SkillVerificationError) as refused:
        checked_manifest(entry([item(), item(uri)]), allow_dynamic=False)
    assert refused.value.reason == "entry"


def test_two_spellings_of_one_file_are_a_file_listed_twice() -> None:
    for a, b in [("my%20file.md", "my file.md"), ("r%C3%A9sum%C3%A9.md", "re\u0301sume\u0301.md"), ("a%2db", "a-b")]:
        with pytest.raises(SkillVerificationError, match="twice") as refused:
            checked_manifest(entry([item(), item(R + a), item(R + b)]), allow_dynamic=False)
        assert refused.value.reason == "entry"
    assert checked_manifest(entry([item(), item(R + "OK.md"), item(R + "ok.md")]), allow_dynamic=False) is not None


async def test_a_dynamic_skill_reads_no_reference_that_is_not_plain_segments() -> None:
    from mcpkit import Client, Server

    server = Server("t")
    uri = server.add_skill("demo", "d", lambda: "body", files={"ok.md": "fine\n"})

    @server.resource("skill://other/secret.md")
    def secret() -> str:
        return "SECRET"

    async with Client(server) as client:
        skill = await client.load_skill(uri, allow_dynamic=True)
        assert (await client.read_skill_file(skill, "ok.md")).content == b"fine\n"
        for reference in ["%2e%2e/other/secret.md", "skill://demo/%2e%2e/other/secret.md", "a%2Fb.md", "x%5Cy.md"]:
            with pytest.raises((SkillVerificationError, ValueError)) as refused:
                await client.read_skill_file(skill, reference)
            assert not isinstance(refused.value, SkillVerificationError) or refused.value.reason == "entry"


def test_a_trailing_newline_passes_neither_the_name_rule_nor_the_digest_rule() -> None:
    from mcpkit import Server
    from mcpkit.protocol.skills import SKILL_NAME

    assert SKILL_NAME.match("demo\n") is None
    assert SKILL_NAME.fullmatch("demo\n") is None
    with pytest.raises(ValueError, match="is not valid"):
        Server("t").add_skill("demo\n", "d", "body")
    uri = "skill://acme/demo\n/SKILL.md"
    with pytest.raises(SkillVerificationError) as refused:
        checked_manifest(entry([item(uri)], name="demo\n", uri=uri), allow_dynamic=False)
    assert refused.value.reason == "entry"
    with pytest.raises(SkillVerificationError) as refused:
        checked_manifest(entry([item(digest=digest_of(b"x") + "\n")]), allow_dynamic=False)
    assert refused.value.reason == "entry"


async def test_a_reference_is_percent_encoded_as_the_server_encodes_a_file_name() -> None:
    from mcpkit import Client, Server

    server = Server("t")
    names = {"my file.md": "spaced\n", "résumé.md": "accents\n", "a+b@c.md": "kept\n", "100%.md": "percent\n"}
    uri = server.add_skill("demo", "d", "body", files=names)
    async with Client(server) as client:
        skill = await client.load_skill(uri)
        assert skill.files == ["SKILL.md", *names]  # decoded, as the files are named
        spellings = {
            "my file.md": ["my file.md", "my%20file.md", "./x/../my file.md", "skill://demo/my file.md"],
            "résumé.md": ["résumé.md", "r%C3%A9sum%C3%A9.md", "re\u0301sume\u0301.md"],
            "a+b@c.md": ["a+b@c.md", "a%2Bb%40c.md"],
            "100%.md": ["100%.md", "100%25.md"],
        }
        for name, references in spellings.items():
            for reference in references:
                found = await client.read_skill_file(skill, reference)
                assert (found.path, found.content) == (name, names[name].encode()), reference


@pytest.mark.parametrize(
    ("yaml", "entry"),
    [
        ("1: a\n'1': a\n", {"1": "a"}),
        ("null: x\n'null': x\n", {"null": "x"}),
        ("m: {1: a, '1': a}\n", {"m": {"1": "a", "2": "b"}}),
    ],
    ids=["top", "null", "nested"],
)
def test_two_yaml_keys_with_one_json_spelling_are_refused(yaml: str, entry: dict[str, Any]) -> None:
    with pytest.raises(SkillVerificationError) as refused:
        compare_frontmatter(parsed(f"---\n{yaml}---\n"), entry, URI)
    assert refused.value.reason == "frontmatter"
