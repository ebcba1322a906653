"""The client's side of the skills extension over real HTTP: a scripted skills server
(tests/support/servers/skills_http.py, raw JSON-RPC under uvicorn on 127.0.0.1) serves
honest and tampered skills, and the server's log says what the client sent — in
particular that nothing of a skill is read before it is loaded, and nothing the held
entry does not list."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from mcpkit import Client, ClientOptions, HttpTransport, McpError, SkillVerificationError, SyncClient
from support.processes import load_server
from support.serving import serve_in_thread

fake = load_server("skills_http")
MODERN = ClientOptions(protocol_version="2026-07-28")
LEGACY = ClientOptions(protocol_version="2025-11-25")
EMAIL = "skill://acme/billing/refunds/examples/email.md"
LOGO = "skill://acme/billing/refunds/assets/logo.png"


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Any, int]]:
    app = fake.SkillsApp()
    with serve_in_thread(app) as port:
        yield app, port


@pytest.fixture
def app(served: tuple[Any, int]) -> Any:
    served[0].log.clear()
    return served[0]


@pytest.fixture
def url(served: tuple[Any, int]) -> Any:
    port = served[1]
    return lambda mode: f"http://127.0.0.1:{port}/{mode}/mcp"


def client(url: str, options: ClientOptions | None = None) -> Client:
    return Client(HttpTransport(url), options)


@pytest.mark.parametrize("options", [None, MODERN, LEGACY], ids=["probed", "modern", "legacy"])
async def test_listing_and_getting_read_no_file(app: Any, url: Any, options: ClientOptions | None) -> None:
    async with client(url("honest"), options) as c:
        uris = [skill.uri async for skill in c.iter_skills()]
        assert uris == [fake.REFUNDS, fake.GIT, fake.DAILY]  # one per page, three pages
        assert [s.uri for s in await c.list_all_skills()] == uris
        page = await c.list_skills()
        assert page.next_cursor == "1"
        assert page.skills[0].frontmatter == fake.REFUNDS_FRONTMATTER
        entry = await c.get_skill(fake.GIT)
        assert entry.frontmatter["name"] == "git-workflow"
        with pytest.raises(McpError) as unknown:
            await c.get_skill("skill://nope/SKILL.md")
        assert unknown.value.code == -32602
        assert not unknown.value.local
    assert app.methods().count("skills/list") == 7
    assert app.reads() == []


async def test_a_pinned_modern_client_asks_discover_once_before_the_first_skills_request(app: Any, url: Any) -> None:
    async with client(url("honest"), MODERN) as c:
        await c.list_skills()
        await c.get_skill(fake.GIT)
    assert app.methods() == ["server/discover", "skills/list", "skills/get"]


@pytest.mark.parametrize("options", [MODERN, LEGACY], ids=["modern", "legacy"])
async def test_an_honest_skill_loads_and_its_listed_files_read_verified(app: Any, url: Any, options: ClientOptions) -> None:
    async with client(url("honest"), options) as c:
        entry = (await c.list_skills()).skills[0]
        assert app.reads() == []
        skill = await c.load_skill(entry)
        assert app.reads() == [fake.REFUNDS]
        assert skill.skill_md.content == fake.REFUNDS_MD
        assert skill.frontmatter == fake.REFUNDS_FRONTMATTER  # the date kept as the string it was written as
        assert skill.body.startswith("\n# Refunds\n")
        assert skill.name == "refunds"
        assert skill.root == "skill://acme/billing/refunds"
        assert not skill.dynamic
        assert skill.files == ["SKILL.md", "examples/email.md", "assets/logo.png"]
        email = await c.read_skill_file(skill, "examples/email.md")
        assert email.content == fake.EMAIL_MD
        assert email.uri == EMAIL
        assert email.path == "examples/email.md"
        assert email.text.startswith("Dear customer")
        logo = await c.read_skill_file(skill, "./assets/../assets/logo.png")  # a blob, resolved like a path
        assert logo.content == fake.LOGO
        assert logo.mime_type == "image/png"
        again = await c.read_skill_file(skill, EMAIL)  # by its URI: verified once, not read again
        assert again is email
        assert await c.read_skill_file(skill, "SKILL.md") is skill.skill_md
    assert app.reads() == [fake.REFUNDS, EMAIL, LOGO]


async def test_a_skill_loads_by_its_uri_through_skills_get(app: Any, url: Any) -> None:
    async with client(url("honest"), MODERN) as c:
        skill = await c.load_skill(fake.GIT)
        assert skill.body == "\nBranch from main.\n"
        with pytest.raises(ValueError, match=r"named by the URI of its SKILL\.md"):
            await c.load_skill("skill://git-workflow/")
    assert app.methods() == ["server/discover", "skills/get", "resources/read"]


@pytest.mark.parametrize(("mode", "reason"), [("digest", "digest"), ("size", "size"), ("frontmatter", "frontmatter")])
@pytest.mark.parametrize("options", [MODERN, LEGACY], ids=["modern", "legacy"])
async def test_a_tampered_skill_md_is_refused_and_nothing_more_is_read(
    app: Any, url: Any, mode: str, reason: str, options: ClientOptions
) -> None:
    async with client(url(mode), options) as c:
        entry = (await c.list_skills()).skills[0]
        with pytest.raises(SkillVerificationError) as refused:
            await c.load_skill(entry)
    error = refused.value
    assert (error.reason, error.uri, error.code, error.local) == (reason, fake.REFUNDS, -32603, True)
    assert error.data == {"uri": fake.REFUNDS, "reason": reason}
    assert app.reads(mode) == [fake.REFUNDS]
    if mode == "frontmatter":
        assert "'description'" in error.message


async def test_a_tampered_supporting_file_is_refused(app: Any, url: Any) -> None:
    async with client(url("file"), MODERN) as c:
        skill = await c.load_skill((await c.list_skills()).skills[0])
        with pytest.raises(SkillVerificationError) as refused:
            await c.read_skill_file(skill, "examples/email.md")
        assert refused.value.reason == "digest"
        assert refused.value.uri == EMAIL
        with pytest.raises(SkillVerificationError):  # refused content is not kept: read, and refused, again
            await c.read_skill_file(skill, "examples/email.md")
    assert app.reads() == [fake.REFUNDS, EMAIL, EMAIL]


async def test_a_file_the_held_entry_does_not_list_is_never_read(app: Any, url: Any) -> None:
    async with client(url("honest"), MODERN) as c:
        skill = await c.load_skill((await c.list_skills()).skills[0])
        children = await c.read_directory("skill://acme/billing/refunds/examples")
        assert [child.uri for child in children.resources] == [EMAIL, fake.UNLISTED]  # the server's live view
        with pytest.raises(SkillVerificationError) as refused:
            await c.read_skill_file(skill, "examples/new.md")
        assert (refused.value.reason, refused.value.uri) == ("unlisted", fake.UNLISTED)
        with pytest.raises(SkillVerificationError):
            await c.read_skill_file(skill, fake.GIT)  # another skill's file
        for outside in ("../other/SKILL.md", "/etc/passwd", "a/../../x", ""):
            with pytest.raises(ValueError, match=r"root|names no file"):
                await c.read_skill_file(skill, outside)
        root = await c.read_directory("skill://acme/billing/refunds")
        assert [child.mime_type for child in root.resources] == ["text/markdown", "inode/directory", "inode/directory"]
        with pytest.raises(McpError) as not_a_directory:
            await c.read_directory(fake.REFUNDS)
        assert not_a_directory.value.code == -32602
    assert app.reads() == [fake.REFUNDS]


async def test_a_skill_is_read_only_through_the_client_that_loaded_it(app: Any, url: Any) -> None:
    async with client(url("honest"), MODERN) as one, client(url("honest"), MODERN) as other:
        skill = await one.load_skill(fake.GIT)
        with pytest.raises(ValueError, match="another client"):
            await other.read_skill_file(skill, "SKILL.md")
    assert app.reads() == [fake.GIT]


async def test_a_dynamic_skill_loads_only_when_the_caller_opts_in(app: Any, url: Any) -> None:
    async with client(url("honest"), MODERN) as c:
        entry = (await c.list_all_skills())[2]
        assert entry.resources == "dynamic"
        with pytest.raises(SkillVerificationError) as refused:
            await c.load_skill(entry)
        assert refused.value.reason == "dynamic"
        assert app.reads() == []
        skill = await c.load_skill(entry, allow_dynamic=True)
        assert skill.dynamic
        assert skill.files is None
        assert skill.frontmatter["name"] == "daily"
        today = await c.read_skill_file(skill, "data/today.md")
        assert today.content == fake.TODAY_MD
        with pytest.raises(SkillVerificationError) as outside:
            await c.read_skill_file(skill, fake.UNLISTED)  # a URI outside its root
        assert outside.value.reason == "unlisted"
        with pytest.raises(ValueError, match="out of the skill's root"):  # a URI that climbs out of it
            await c.read_skill_file(skill, "skill://reports/daily/../../acme/billing/refunds/examples/new.md")
        again = await c.read_skill_file(skill, "skill://reports/daily/./data/x/../today.md")
        assert again.uri == "skill://reports/daily/data/today.md"
    assert app.reads() == [fake.DAILY, "skill://reports/daily/data/today.md", "skill://reports/daily/data/today.md"]


async def test_what_is_read_of_a_dynamic_skill_is_bounded_by_16_mib_in_all(app: Any, url: Any) -> None:
    async with client(url("honest"), MODERN) as c:
        skill = await c.load_skill(fake.DAILY, allow_dynamic=True)
        big = await c.read_skill_file(skill, "data/big.md")  # 9 MiB: within the bound
        assert len(big.content) == 9 * 1024 * 1024
        with pytest.raises(SkillVerificationError) as refused:  # 18 MiB and more in all: past it
            await c.read_skill_file(skill, "data/big.md")
        assert refused.value.reason == "limits"
        today = await c.read_skill_file(skill, "data/today.md")  # what was refused was not counted
        assert today.content == fake.TODAY_MD


async def test_reads_of_a_dynamic_skill_under_way_at_once_share_the_16_mib(app: Any, url: Any) -> None:
    async with client(url("honest"), MODERN) as c:
        skill = await c.load_skill(fake.DAILY, allow_dynamic=True)
        results = await asyncio.gather(
            *(c.read_skill_file(skill, "data/big.md") for _ in range(2)), return_exceptions=True
        )  # 9 MiB each: both started within the bound, only one fits in it
        refused = [r for r in results if isinstance(r, SkillVerificationError)]
        assert len(refused) == 1
        assert refused[0].reason == "limits"
        assert sum(len(r.content) for r in results if not isinstance(r, BaseException)) == 9 * 1024 * 1024


async def test_a_read_that_does_not_answer_the_file_is_refused(app: Any, url: Any) -> None:
    async with client(url("garbled"), MODERN) as c:
        for uri, why in ((fake.REFUNDS, "once"), (fake.GIT, "both"), (fake.DAILY, "not base64")):
            with pytest.raises(SkillVerificationError, match=why) as refused:
                await c.load_skill(uri, allow_dynamic=True)
            assert refused.value.reason == "content"
        with pytest.raises(SkillVerificationError, match="answered the entry of skill://git-workflow") as other:
            await c.load_skill("skill://other/SKILL.md")  # skills/get answered another skill's entry
        assert other.value.reason == "entry"
    assert app.reads() == [fake.REFUNDS, fake.GIT, fake.DAILY]


async def test_entries_over_the_limits_are_refused_before_any_read(app: Any, url: Any) -> None:
    async with client(url("big"), MODERN) as c:
        refunds, git, _ = await c.list_all_skills()
        for entry, what in ((git, "513 files"), (refunds, "16777216")):
            with pytest.raises(SkillVerificationError, match=what) as refused:
                await c.load_skill(entry)
            assert refused.value.reason == "limits"
    assert app.reads() == []


@pytest.mark.parametrize("options", [None, MODERN, LEGACY], ids=["probed", "modern", "legacy"])
async def test_a_server_without_the_extension_is_sent_no_skills_request(
    app: Any, url: Any, options: ClientOptions | None
) -> None:
    async with client(url("none"), options) as c:
        entry = (await client_entries(url))[1]
        calls = (
            c.list_skills(),
            c.list_all_skills(),
            c.get_skill(fake.GIT),
            c.load_skill(entry),
            c.read_directory("skill://git-workflow"),
        )
        for call in calls:
            with pytest.raises(McpError, match="does not declare the skills extension") as refused:
                await call
            assert refused.value.code == -32601
            assert refused.value.local
    sent = [m for m in app.methods("none") if m not in ("server/discover", "initialize", "notifications/initialized")]
    assert sent == []


async def client_entries(url: Any) -> list[Any]:
    async with client(url("honest"), MODERN) as c:
        return await c.list_all_skills()


async def test_directory_reads_go_only_to_a_server_that_declared_them(app: Any, url: Any) -> None:
    async with client(url("nodir"), MODERN) as c:
        assert len((await c.list_skills()).skills) == 1
        with pytest.raises(McpError, match="directoryRead") as refused:
            await c.read_directory("skill://acme/billing/refunds")
        assert refused.value.code == -32601
        assert refused.value.local
    assert "resources/directory/read" not in app.methods()


def test_the_blocking_client_loads_and_reads_the_same_way(app: Any, url: Any) -> None:
    with SyncClient(HttpTransport(url("honest")), MODERN) as c:
        entry = c.list_all_skills()[0]
        assert c.get_skill(entry.uri) == entry
        skill = c.load_skill(entry)
        assert c.read_skill_file(skill, "examples/email.md").content == fake.EMAIL_MD
        assert len(c.read_directory("skill://acme/billing/refunds/examples").resources) == 2
        assert c.list_skills().next_cursor == "1"
    assert app.reads() == [fake.REFUNDS, EMAIL]
