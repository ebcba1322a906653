"""The server side of the skills extension (SEP-2640, docs/skills.md) over real
transports: an in-memory ``Client(server)`` sending the extension's requests with
``send_request`` (the typed client calls are not built yet), and raw JSON-RPC over
Streamable HTTP to uvicorn on 127.0.0.1. The skills are real folders in a temporary
directory, hostile ones included: links out of the skill, hidden files, a FIFO, a skill
over the limits, URIs that try to climb out."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from mcpkit import Client, ClientOptions, McpError, Server
from support.eras import LEGACY, MODERN
from support.serving import serve_in_thread
from support.wire import messages, modern, open_session, request

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe"
SKILL_MD = """---
name: pdf-processing
description: Extract, fill, and assemble PDF documents
license: Apache-2.0
allowed-tools: [Read, Bash]
metadata:
  version: "2.1.0"
  owners: [docs-team]
---

# PDF processing

Pick a template from `templates/`.
"""


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_bytes(data.encode())
    else:
        path.write_bytes(data)
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A skills directory: ``pdf-processing`` (subfolders, a binary file, CRLF and BOM
    text, a nested skill ``filler``, and hostile entries) and ``acme/billing/refunds``."""
    root = tmp_path / "skills"
    pdf = root / "pdf-processing"
    write(pdf / "SKILL.md", SKILL_MD)
    write(pdf / "references" / "FORMS.md", "# Forms\n")
    write(pdf / "templates" / "invoice.md", "Invoice\r\nTotal: {total}\r\n")  # CRLF kept as it is
    write(pdf / "templates" / "regional" / "eu-invoice.md", "\ufeffRechnung\n")  # a BOM kept as it is
    write(pdf / "templates" / "filler" / "SKILL.md", "---\nname: filler\ndescription: Fill a template\n---\nFill it.\n")
    write(pdf / "assets" / "logo.png", PNG)
    write(pdf / "notes with space.md", "spaced\n")
    # hostile or hidden: none of these may be served
    outside = write(tmp_path / "outside" / "secret.txt", "SECRET-outside-the-skill\n")
    (pdf / "leak.txt").symlink_to(outside)
    (pdf / "leakdir").symlink_to(outside.parent, target_is_directory=True)
    (pdf / "alias.md").symlink_to(pdf / "references" / "FORMS.md")  # inside the skill: served
    write(pdf / ".env", "TOKEN=hidden\n")
    write(pdf / ".git" / "config", "[core]\n")
    os.mkfifo(pdf / "pipe")
    write(root / "acme" / "billing" / "refunds" / "SKILL.md", "---\nname: refunds\ndescription: Refund per policy\n---\n")
    write(root / "acme" / "billing" / "refunds" / "examples" / "email.md", "Dear customer\n")
    write(root / "acme" / "README.md", "not part of any skill\n")
    return root


@pytest.fixture
def server(tree: Path) -> Server:
    srv = Server("skills-tests", page_size=1000)
    srv.add_skills(tree)
    return srv


async def call(server: Server, method: str, params: dict[str, Any] | None = None, *, version: str = MODERN) -> Any:
    async with Client(server, ClientOptions(protocol_version=version)) as client:
        return await client.send_request(method, params)


async def refused(server: Server, method: str, params: dict[str, Any], *, version: str = MODERN) -> McpError:
    with pytest.raises(McpError) as info:
        await call(server, method, params, version=version)
    return info.value


def raw_bytes(content: dict[str, Any]) -> bytes:
    if "text" in content:
        return str(content["text"]).encode("utf-8")
    return base64.b64decode(content["blob"])


# --- serving a directory -------------------------------------------------------------------------


async def test_every_listed_file_reads_back_as_the_bytes_its_digest_and_size_describe(server: Server, tree: Path) -> None:
    async with Client(server) as client:
        listed = await client.send_request("skills/list")
        assert listed["resultType"] == "complete"
        assert "ttlMs" in listed
        assert "cacheScope" in listed
        assert "nextCursor" not in listed
        by_uri = {entry["uri"]: entry for entry in listed["skills"]}
        assert list(by_uri) == [
            "skill://acme/billing/refunds/SKILL.md",
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/templates/filler/SKILL.md",
        ]
        pdf = by_uri["skill://pdf-processing/SKILL.md"]
        uris = [r["uri"] for r in pdf["resources"]]
        assert uris[0] == pdf["uri"]
        assert len(uris) == len(set(uris))
        assert sorted(uris[1:]) == [
            "skill://pdf-processing/alias.md",
            "skill://pdf-processing/assets/logo.png",
            "skill://pdf-processing/notes%20with%20space.md",
            "skill://pdf-processing/references/FORMS.md",
            "skill://pdf-processing/templates/filler/SKILL.md",  # the nested skill is part of this one
            "skill://pdf-processing/templates/invoice.md",
            "skill://pdf-processing/templates/regional/eu-invoice.md",
        ]
        for entry in by_uri.values():
            for resource in entry["resources"]:
                read = await client.send_request("resources/read", {"uri": resource["uri"]})
                (content,) = read["contents"]
                data = raw_bytes(content)
                assert len(data) == resource["size"], resource["uri"]
                assert "sha256:" + hashlib.sha256(data).hexdigest() == resource["digest"], resource["uri"]
    on_disk = {
        "skill://pdf-processing/templates/invoice.md": tree / "pdf-processing/templates/invoice.md",
        "skill://pdf-processing/templates/regional/eu-invoice.md": tree / "pdf-processing/templates/regional/eu-invoice.md",
        "skill://pdf-processing/assets/logo.png": tree / "pdf-processing/assets/logo.png",
    }
    sizes = {r["uri"]: r["size"] for r in pdf["resources"]}
    for uri, path in on_disk.items():
        assert sizes[uri] == len(path.read_bytes())


async def test_frontmatter_is_the_yaml_verbatim_and_names_match_their_folders(server: Server) -> None:
    listed = await call(server, "skills/list")
    pdf = next(e for e in listed["skills"] if e["uri"] == "skill://pdf-processing/SKILL.md")
    assert pdf["frontmatter"] == yaml.safe_load(SKILL_MD.split("---\n")[1])
    for entry in listed["skills"]:
        assert entry["uri"].split("/")[-2] == entry["frontmatter"]["name"]


async def test_resources_list_describes_skill_md_from_its_frontmatter_and_guesses_the_others(server: Server) -> None:
    listed = await call(server, "resources/list")
    by_uri = {r["uri"]: r for r in listed["resources"]}
    skill_md = by_uri["skill://pdf-processing/SKILL.md"]
    assert skill_md["mimeType"] == "text/markdown"
    assert skill_md["name"] == "pdf-processing"
    assert skill_md["description"] == "Extract, fill, and assemble PDF documents"
    assert by_uri["skill://pdf-processing/templates/filler/SKILL.md"]["name"] == "filler"
    assert by_uri["skill://pdf-processing/assets/logo.png"]["mimeType"] == "image/png"
    assert by_uri["skill://pdf-processing/references/FORMS.md"]["mimeType"] == "text/markdown"
    read = await call(server, "resources/read", {"uri": "skill://pdf-processing/assets/logo.png"})
    assert "blob" in read["contents"][0]  # not UTF-8: a blob, never mangled text


async def test_links_out_of_the_skill_hidden_files_and_special_files_are_not_served(
    tree: Path, caplog: pytest.LogCaptureFixture
) -> None:
    srv = Server("hostile")
    with caplog.at_level(logging.WARNING, logger="mcpkit.server"):
        srv.add_skills(tree)
    warned = caplog.text
    assert "leak.txt links outside" in warned
    assert "leakdir links outside" in warned
    assert "pipe is not a regular file" in warned
    listed = await call(srv, "resources/list")
    served = [r["uri"] for r in listed["resources"]]
    for name in ("leak.txt", "leakdir", "secret.txt", ".env", ".git", "pipe", "README.md"):
        assert not any(name in uri for uri in served), name
    for uri in (
        "skill://pdf-processing/leak.txt",
        "skill://pdf-processing/leakdir/secret.txt",
        "skill://pdf-processing/.env",
        "skill://pdf-processing/pipe",
    ):
        error = await refused(srv, "resources/read", {"uri": uri})
        assert error.code == -32602, uri
    entries = await call(srv, "skills/list")
    assert "SECRET" not in str(entries)
    assert "alias.md" in str(entries)  # a link that stays inside the skill is an ordinary file


@pytest.mark.parametrize(
    "uri",
    [
        "skill://pdf-processing/../pdf-processing/SKILL.md",
        "skill://pdf-processing/references/../SKILL.md",
        "skill://pdf-processing/%2e%2e/outside/secret.txt",
        "skill://pdf-processing/leakdir%2Fsecret.txt",
        "skill://pdf-processing/references%2FFORMS.md",
        "skill:///etc/passwd",
        "skill://pdf-processing//etc/passwd",
        "file:///etc/passwd",
    ],
)
async def test_uris_that_climb_or_hide_separators_reach_nothing(server: Server, uri: str) -> None:
    for method in ("resources/read", "skills/get", "resources/directory/read"):
        error = await refused(server, method, {"uri": uri})
        assert error.code == -32602, (method, uri)


# --- skills/get and resources/directory/read -----------------------------------------------------


async def test_skills_get_answers_for_a_served_skill_and_refuses_anything_else(server: Server) -> None:
    got = await call(server, "skills/get", {"uri": "skill://acme/billing/refunds/SKILL.md"})
    assert got["resultType"] == "complete"
    assert "nextCursor" not in got
    assert {"ttlMs", "cacheScope"} <= set(got)
    assert got["skill"]["frontmatter"] == {"name": "refunds", "description": "Refund per policy"}
    listed = await call(server, "skills/list")
    assert got["skill"] in listed["skills"]
    for uri in (
        "skill://mcp-nonexistent/SKILL.md",
        "skill://pdf-processing/references/FORMS.md",  # a file, not a SKILL.md
        "skill://pdf-processing",  # a directory
        "skill://acme/billing/SKILL.md",  # the prefix is no skill
    ):
        error = await refused(server, "skills/get", {"uri": uri})
        assert error.code == -32602
        assert error.message == f"No skill is served at {uri}"


async def test_a_directory_read_lists_the_direct_children_files_then_subdirectories(server: Server) -> None:
    root = await call(server, "resources/directory/read", {"uri": "skill://pdf-processing"})
    assert root["resultType"] == "complete"
    children = [(r["uri"].rsplit("/", 1)[-1], r.get("mimeType")) for r in root["resources"]]
    assert children == [
        ("SKILL.md", "text/markdown"),
        ("alias.md", "text/markdown"),
        ("notes%20with%20space.md", "text/markdown"),
        ("assets", "inode/directory"),
        ("references", "inode/directory"),
        ("templates", "inode/directory"),
    ]
    templates = await call(server, "resources/directory/read", {"uri": "skill://pdf-processing/templates"})
    assert [(r["name"], r["mimeType"]) for r in templates["resources"]] == [
        ("invoice.md", "text/markdown"),
        ("filler", "inode/directory"),  # a nested skill's root is a directory of the enclosing one
        ("regional", "inode/directory"),
    ]
    assert all(not r["uri"].endswith("/") for r in templates["resources"])
    nested = await call(server, "resources/directory/read", {"uri": "skill://pdf-processing/templates/filler"})
    assert [r["name"] for r in nested["resources"]] == ["filler"]  # its SKILL.md, described by its frontmatter
    refunds = await call(server, "resources/directory/read", {"uri": "skill://acme/billing/refunds/examples"})
    assert [r["uri"] for r in refunds["resources"]] == ["skill://acme/billing/refunds/examples/email.md"]


async def test_a_directory_read_refuses_a_file_an_unknown_uri_and_a_bad_cursor(server: Server) -> None:
    error = await refused(server, "resources/directory/read", {"uri": "skill://pdf-processing/SKILL.md"})
    assert (error.code, error.message) == (-32602, "skill://pdf-processing/SKILL.md is not a directory resource")
    error = await refused(server, "resources/directory/read", {"uri": "skill://pdf-processing/nothing-here"})
    assert (error.code, error.message) == (-32602, "No directory resource at skill://pdf-processing/nothing-here")
    error = await refused(server, "resources/directory/read", {"uri": "skill://acme/billing"})  # a prefix, no skill's
    assert error.code == -32602
    error = await refused(server, "resources/directory/read", {"uri": "skill://pdf-processing", "cursor": "not-ours"})
    assert error.code == -32602
    error = await refused(server, "skills/list", {"cursor": "not-ours"})
    assert error.code == -32602


async def test_pages_of_skills_and_of_a_directory_follow_their_cursors_and_never_split_an_entry(tree: Path) -> None:
    srv = Server("paged", page_size=2)
    srv.add_skills(tree)
    async with Client(srv) as client:
        seen: list[dict[str, Any]] = []
        params: dict[str, Any] = {}
        while True:
            page = await client.send_request("skills/list", params)
            assert len(page["skills"]) <= 2
            seen.extend(page["skills"])
            if "nextCursor" not in page:
                break
            params = {"cursor": page["nextCursor"]}
        assert [e["uri"] for e in seen] == [e["uri"] for e in (await call(whole(tree), "skills/list"))["skills"]]
        children: list[str] = []
        params = {"uri": "skill://pdf-processing"}
        while True:
            page = await client.send_request("resources/directory/read", params)
            children.extend(r["name"] for r in page["resources"])
            if "nextCursor" not in page:
                break
            params = {"uri": "skill://pdf-processing", "cursor": page["nextCursor"]}
        assert len(children) == 6


def whole(tree: Path) -> Server:
    """The server of ``tree`` with the default page size: every entry on one page."""
    srv = Server("whole")
    srv.add_skills(tree)
    return srv


# --- eras and capabilities -----------------------------------------------------------------------


async def test_the_modern_era_declares_the_extension_with_directory_read_and_resources(server: Server) -> None:
    found = await call(server, "server/discover")
    caps = found["capabilities"]
    assert caps["extensions"]["io.modelcontextprotocol/skills"] == {"directoryRead": True}
    assert "resources" in caps
    server.directory_read = False
    found = await call(server, "server/discover")
    assert found["capabilities"]["extensions"]["io.modelcontextprotocol/skills"] == {}
    error = await refused(server, "resources/directory/read", {"uri": "skill://pdf-processing"})
    assert error.code == -32601
    assert (await call(server, "skills/list"))["skills"]


async def test_a_server_without_skills_declares_nothing_and_knows_no_skill_method() -> None:
    plain = Server("plain")
    found = await call(plain, "server/discover")
    assert "extensions" not in found["capabilities"]
    for method, params in (("skills/list", {}), ("skills/get", {"uri": "skill://x/SKILL.md"})):
        error = await refused(plain, method, params)
        assert error.code == -32601


async def test_a_legacy_client_is_refused_the_methods_naming_the_revision_but_reads_the_files(server: Server) -> None:
    async with Client(server, ClientOptions(protocol_version=LEGACY)) as client:
        assert client.era == "legacy"
        assert "extensions" not in client.server_capabilities
        for method, params in (
            ("skills/list", {}),
            ("skills/get", {"uri": "skill://pdf-processing/SKILL.md"}),
            ("resources/directory/read", {"uri": "skill://pdf-processing"}),
        ):
            with pytest.raises(McpError) as info:
                await client.send_request(method, params)
            assert info.value.code == -32601
            assert method in info.value.message
            assert "2026-07-28" in info.value.message
        listed = await client.send_request("resources/list")
        assert any(r["uri"] == "skill://pdf-processing/SKILL.md" for r in listed["resources"])
        read = await client.send_request("resources/read", {"uri": "skill://pdf-processing/SKILL.md"})
        assert read["contents"][0]["text"] == SKILL_MD


# --- refused at load -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("folder", "skill_md", "says"),
    [
        ("pdf", "---\nname: pdf-processing\ndescription: x\n---\n", "must be the skill folder's name 'pdf'"),
        ("Bad_Name", "---\nname: Bad_Name\ndescription: x\n---\n", "is not valid"),
        ("a--b", "---\nname: a--b\ndescription: x\n---\n", "is not valid"),
        ("nodesc", "---\nname: nodesc\n---\n", "needs a description"),
        ("emptydesc", "---\nname: emptydesc\ndescription: '  '\n---\n", "needs a description"),
        ("nofront", "# no frontmatter\n", "must begin with YAML frontmatter"),
        ("unclosed", "---\nname: unclosed\ndescription: x\n", "no closing '---'"),
        ("notmap", "---\n- a\n- b\n---\n", "must be a YAML mapping"),
        ("badyaml", "---\nname: [unclosed\n---\n", "not valid YAML"),
        ("dated", "---\nname: dated\ndescription: x\nreleased: 2024-01-31\n---\n", "quote it in the YAML"),
        ("intkey", "---\nname: intkey\ndescription: x\n1: one\n---\n", "is not a string"),
    ],
)
def test_a_skill_with_invalid_frontmatter_is_refused_at_load(tmp_path: Path, folder: str, skill_md: str, says: str) -> None:
    write(tmp_path / folder / "SKILL.md", skill_md)
    with pytest.raises(ValueError, match=re.escape(says)) as info:
        Server("s").add_skills(tmp_path)
    assert folder in str(info.value)


def test_a_skill_over_the_file_count_is_refused_at_load(tmp_path: Path) -> None:
    write(tmp_path / "many" / "SKILL.md", "---\nname: many\ndescription: x\n---\n")
    for i in range(512):  # with SKILL.md: 513 files
        write(tmp_path / "many" / "files" / f"{i}.txt", "x")
    with pytest.raises(ValueError, match="more than 512 files"):
        Server("s").add_skills(tmp_path)


def test_a_skill_over_16_mib_is_refused_at_load_before_the_big_file_is_read(tmp_path: Path) -> None:
    write(tmp_path / "big" / "SKILL.md", "---\nname: big\ndescription: x\n---\n")
    with open(tmp_path / "big" / "huge.bin", "wb") as f:  # sparse: nothing is written to disk
        f.truncate(16 * 1024 * 1024)
    with pytest.raises(ValueError, match="more than 16777216 bytes"):
        Server("s").add_skills(tmp_path)


def test_a_skill_at_the_limits_is_served(tmp_path: Path) -> None:
    skill_md = "---\nname: full\ndescription: x\n---\n"
    write(tmp_path / "full" / "SKILL.md", skill_md)
    for i in range(510):
        write(tmp_path / "full" / "files" / f"{i}.txt", "x")
    with open(tmp_path / "full" / "rest.bin", "wb") as f:
        f.truncate(16 * 1024 * 1024 - 510 - len(skill_md))
    assert Server("s").add_skills(tmp_path) == ["skill://full/SKILL.md"]


def test_misplaced_directories_and_colliding_uris_are_refused(tmp_path: Path, tree: Path) -> None:
    with pytest.raises(ValueError, match="is not a directory"):
        Server("s").add_skills(tmp_path / "missing")
    with pytest.raises(ValueError, match=re.escape("holds a SKILL.md itself")):
        Server("s").add_skills(tree / "acme" / "billing" / "refunds")
    srv = Server("s")
    srv.add_skills(tree)
    with pytest.raises(ValueError, match=re.escape("is served at skill://acme/billing/refunds/SKILL.md already")):
        srv.add_skills(tree)
    with pytest.raises(ValueError, match="would nest"):
        srv.add_skill("extra", "x", prefix="pdf-processing")
    with pytest.raises(ValueError, match="prefix"):
        srv.add_skills(tree, prefix="../up")


def test_without_pyyaml_reading_a_directory_says_which_extra_to_install(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml now fails
    with pytest.raises(ImportError, match=r"mcpkit\[skills\]"):
        Server("s").add_skills(tree)
    srv = Server("s")
    assert srv.add_skill("in-code", "needs no YAML library") == "skill://in-code/SKILL.md"


# --- skills made in code -------------------------------------------------------------------------


async def test_a_skill_made_in_code_serves_its_frontmatter_verbatim_and_its_files() -> None:
    srv = Server("code")
    uri = srv.add_skill(
        "git-workflow",
        'Follow the team\'s "Git" conventions: branch, commit',
        "# Git\n\nBranch from main.\n",
        files={"references/COMMITS.md": "Imperative mood.\n", "assets/icon.bin": b"\x00\xff\x10"},
        frontmatter={"license": "MIT", "metadata": {"version": "1.0", "tags": ["git", "vcs"]}, "count": 3, "ok": True},
        prefix="team/dev",
    )
    assert uri == "skill://team/dev/git-workflow/SKILL.md"
    got = (await call(srv, "skills/get", {"uri": uri}))["skill"]
    assert got["frontmatter"] == {
        "name": "git-workflow",
        "description": 'Follow the team\'s "Git" conventions: branch, commit',
        "license": "MIT",
        "metadata": {"version": "1.0", "tags": ["git", "vcs"]},
        "count": 3,
        "ok": True,
    }
    read = await call(srv, "resources/read", {"uri": uri})
    text = read["contents"][0]["text"]
    assert yaml.safe_load(text.split("---\n")[1]) == got["frontmatter"]  # what a host parses is the entry's
    assert text.endswith("# Git\n\nBranch from main.\n")
    for resource in got["resources"]:
        (content,) = (await call(srv, "resources/read", {"uri": resource["uri"]}))["contents"]
        assert "sha256:" + hashlib.sha256(raw_bytes(content)).hexdigest() == resource["digest"]
    listing = await call(srv, "resources/directory/read", {"uri": "skill://team/dev/git-workflow"})
    assert [r["name"] for r in listing["resources"]] == ["git-workflow", "assets", "references"]


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"name": "Bad"}, "is not valid"),
        ({"name": "-lead"}, "is not valid"),
        ({"name": "x" * 65}, "is not valid"),
        ({"description": ""}, "needs a description"),
        ({"files": {"../escape.md": "x"}}, "must be relative"),
        ({"files": {"/abs.md": "x"}}, "must be relative"),
        ({"files": {"a\\b.md": "x"}}, "must be relative"),
        ({"files": {".hidden": "x"}}, "must be relative"),
        ({"files": {"SKILL.md": "x"}}, "SKILL.md is made from"),
        ({"files": {"docs": "x", "docs/a/b.md": "y"}}, "is the folder of another file"),
        ({"prefix": "a/../b"}, "prefix"),
        ({"prefix": "a b"}, "prefix"),
        ({"frontmatter": {"when": float("nan")}}, "JSON cannot carry"),
        ({"frontmatter": {"name": "other"}}, "give name once"),
        ({"files": {f"f{i}.md": "x" for i in range(512)}}, "more than 512 files"),
    ],
)
def test_a_skill_made_in_code_is_refused_at_registration(kwargs: dict[str, Any], says: str) -> None:
    args: dict[str, Any] = {"name": "ok-name", "description": "fine", **kwargs}
    with pytest.raises(ValueError, match=re.escape(says)):
        Server("s").add_skill(args.pop("name"), args.pop("description"), **args)


async def test_a_dynamic_skill_says_so_and_generates_each_read() -> None:
    srv = Server("dynamic")
    reads: list[int] = []

    async def today() -> str:
        reads.append(1)
        return f"Report number {len(reads)}\n"

    def data() -> bytes:
        return b"\x00generated"

    uri = srv.add_skill("daily", "Assemble today's report", today, files={"data/raw.bin": data}, prefix="reports")
    got = (await call(srv, "skills/get", {"uri": uri}))["skill"]
    assert got == {"uri": uri, "frontmatter": {"name": "daily", "description": "Assemble today's report"}, "resources": "dynamic"}
    first = (await call(srv, "resources/read", {"uri": uri}))["contents"][0]["text"]
    second = (await call(srv, "resources/read", {"uri": uri}))["contents"][0]["text"]
    assert first.endswith("Report number 1\n")
    assert second.endswith("Report number 2\n")
    assert yaml.safe_load(first.split("---\n")[1]) == got["frontmatter"]
    blob = (await call(srv, "resources/read", {"uri": "skill://reports/daily/data/raw.bin"}))["contents"][0]
    assert base64.b64decode(blob["blob"]) == b"\x00generated"
    folder = await call(srv, "resources/directory/read", {"uri": "skill://reports/daily/data"})
    assert [r["uri"] for r in folder["resources"]] == ["skill://reports/daily/data/raw.bin"]


# --- changes -------------------------------------------------------------------------------------


async def test_adding_removing_and_reloading_skills_is_announced(tree: Path) -> None:
    srv = Server("changing")
    srv.add_skills(tree)
    heard: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
    stop = srv.on_change(lambda method, params: heard.put_nowait((method, params)))

    async def next_notice() -> tuple[str, dict[str, Any]]:
        return await asyncio.wait_for(heard.get(), 10)

    try:
        async with srv.running():
            uri = srv.add_skill("added", "added while serving")
            assert await next_notice() == ("notifications/resources/list_changed", {})
            assert (await call(srv, "skills/get", {"uri": uri}))["skill"]["uri"] == uri
            srv.remove_skill(uri)
            assert await next_notice() == ("notifications/resources/list_changed", {})
            assert (await refused(srv, "skills/get", {"uri": uri})).code == -32602
            assert (await refused(srv, "resources/read", {"uri": "skill://added/SKILL.md"})).code == -32602

            before = (await call(srv, "skills/get", {"uri": "skill://pdf-processing/SKILL.md"}))["skill"]
            write(tree / "pdf-processing" / "references" / "FORMS.md", "# Forms, second edition\n")
            write(tree / "fresh" / "SKILL.md", "---\nname: fresh\ndescription: new on disk\n---\n")
            assert "skill://fresh/SKILL.md" in srv.reload_skills()
            notices = sorted([await next_notice() for _ in range(3)], key=lambda n: (n[0], str(n[1])))
            assert notices == [
                ("notifications/resources/list_changed", {}),
                ("notifications/resources/updated", {"uri": "skill://pdf-processing/alias.md"}),  # a link to it
                ("notifications/resources/updated", {"uri": "skill://pdf-processing/references/FORMS.md"}),
            ]
            after = (await call(srv, "skills/get", {"uri": "skill://pdf-processing/SKILL.md"}))["skill"]
            assert after["resources"] != before["resources"]
            read = await call(srv, "resources/read", {"uri": "skill://pdf-processing/references/FORMS.md"})
            assert read["contents"][0]["text"] == "# Forms, second edition\n"
            assert (await call(srv, "skills/get", {"uri": "skill://fresh/SKILL.md"}))["skill"]["frontmatter"]["name"] == "fresh"

            write(tree / "fresh" / "SKILL.md", "---\nname: renamed\ndescription: wrong now\n---\n")
            with pytest.raises(ValueError, match="must be the skill folder's name"):
                srv.reload_skills()
            assert (await call(srv, "skills/get", {"uri": "skill://fresh/SKILL.md"}))["skill"]["frontmatter"]["name"] == "fresh"
            with pytest.raises(KeyError):
                srv.remove_skill("skill://never/SKILL.md")
    finally:
        stop()


# --- raw JSON-RPC over HTTP ----------------------------------------------------------------------


@pytest.fixture
def url(server: Server) -> Iterator[str]:
    with serve_in_thread(server.asgi_app()) as port:
        yield f"http://127.0.0.1:{port}/mcp"


def post_modern(http: httpx.Client, url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body, headers = modern(method, params)
    resp = http.post(url, json=body, headers=headers)
    (message,) = messages(resp)
    return message


def test_over_http_the_modern_era_serves_the_methods_and_refuses_hostile_uris(url: str) -> None:
    with httpx.Client(timeout=30) as http:
        listed = post_modern(http, url, "skills/list", {})["result"]
        assert listed["resultType"] == "complete"
        assert {"ttlMs", "cacheScope"} <= set(listed)
        entry = next(e for e in listed["skills"] if e["uri"] == "skill://pdf-processing/SKILL.md")
        for resource in entry["resources"]:
            (content,) = post_modern(http, url, "resources/read", {"uri": resource["uri"]})["result"]["contents"]
            assert "sha256:" + hashlib.sha256(raw_bytes(content)).hexdigest() == resource["digest"]
        for method, params in (
            ("skills/get", {"uri": "skill://pdf-processing/../acme/billing/refunds/SKILL.md"}),
            ("skills/get", {"uri": "skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md"}),
            ("resources/directory/read", {"uri": "skill://pdf-processing/SKILL.md"}),
            ("resources/directory/read", {"uri": "skill://pdf-processing/leakdir"}),
            ("resources/read", {"uri": "skill://pdf-processing/leak.txt"}),
            ("skills/list", {"cursor": "!!"}),
        ):
            answer = post_modern(http, url, method, params)
            assert answer["error"]["code"] == -32602, (method, params, answer)
        directory = post_modern(http, url, "resources/directory/read", {"uri": "skill://pdf-processing/templates"})["result"]
        assert {"name": "regional", "uri": "skill://pdf-processing/templates/regional", "mimeType": "inode/directory"} in (
            directory["resources"]
        )


def test_over_http_a_legacy_session_is_refused_the_methods_naming_the_revision(url: str) -> None:
    with httpx.Client(timeout=30) as http:
        session = open_session(http, url, version=LEGACY)
        for method in ("skills/list", "skills/get", "resources/directory/read"):
            resp = http.post(url, json=request(method, {"uri": "skill://pdf-processing/SKILL.md"}), headers=session)
            (answer,) = messages(resp)
            assert answer["error"]["code"] == -32601
            assert "2026-07-28" in answer["error"]["message"]
        resp = http.post(url, json=request("resources/read", {"uri": "skill://pdf-processing/SKILL.md"}), headers=session)
        (answer,) = messages(resp)
        assert answer["result"]["contents"][0]["text"] == SKILL_MD


# --- links that loop, and skill files managed only through their skill ---------------------------


async def test_links_that_loop_or_dangle_are_skipped_and_a_link_back_is_no_second_skill(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write(root / "loops" / "SKILL.md", "---\nname: loops\ndescription: links in circles\n---\n")
    write(root / "loops" / "real" / "doc.md", "doc\n")
    (root / "loops" / "self").symlink_to(root / "loops", target_is_directory=True)  # back to the skill itself
    (root / "loops" / "a").symlink_to(root / "loops" / "b")
    (root / "loops" / "b").symlink_to(root / "loops" / "a")  # a loop of links
    (root / "loops" / "gone").symlink_to(root / "loops" / "missing.md")  # dangling
    srv = Server("loops")
    assert srv.add_skills(root) == ["skill://loops/SKILL.md"]
    (entry,) = (await call(srv, "skills/list"))["skills"]
    assert [r["uri"] for r in entry["resources"]] == ["skill://loops/SKILL.md", "skill://loops/real/doc.md"]


def test_a_skill_file_is_removed_or_hidden_only_with_its_skill(server: Server) -> None:
    uri = "skill://pdf-processing/references/FORMS.md"
    with pytest.raises(ValueError, match="is a file of a skill"):
        server.remove_resource(uri)
    with pytest.raises(ValueError, match="is a file of a skill"):
        server.disable("resource", uri)
    hidden = Server("hidden")

    @hidden.resource("skill://taken/SKILL.md")
    def taken() -> str:
        return "mine"

    hidden.disable("resource", "skill://taken/SKILL.md")
    with pytest.raises(ValueError, match="is registered already"):
        hidden.add_skill("taken", "collides with a hidden resource")


@pytest.mark.parametrize(
    ("frontmatter", "says"),
    [
        ("name: bombs\ndescription: x\na: &a [1, 1]\nb: [*a, *a]\n", "uses a YAML alias"),
        ("name: bombs\ndescription: x\nbig: '" + "x" * 70_000 + "'\n", "longer than 65536 bytes"),
        # libyaml refuses it as YAML; the pure-Python parser would recurse: either way, refused
        ("name: bombs\ndescription: x\ndeep: " + "[" * 5000 + "]" * 5000 + "\n", "nesting depth|nested too deeply"),
    ],
)
def test_frontmatter_that_would_blow_up_is_refused(tmp_path: Path, frontmatter: str, says: str) -> None:
    write(tmp_path / "bombs" / "SKILL.md", f"---\n{frontmatter}---\n")
    with pytest.raises(ValueError, match=says if "|" in says else re.escape(says)):
        Server("s").add_skills(tmp_path)


async def test_a_file_whose_name_is_not_utf8_is_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write(tmp_path / "names" / "SKILL.md", "---\nname: names\ndescription: odd file names\n---\n")
    write(Path(os.fsdecode(os.path.join(os.fsencode(tmp_path / "names"), b"bad-\xff.md"))), "latin-1 name\n")
    write(tmp_path / "names" / "ok.md", "fine\n")
    srv = Server("names")
    with caplog.at_level(logging.WARNING, logger="mcpkit.server"):
        srv.add_skills(tmp_path)
    assert "is not UTF-8: not served" in caplog.text
    (entry,) = (await call(srv, "skills/list"))["skills"]
    assert [r["uri"] for r in entry["resources"]] == ["skill://names/SKILL.md", "skill://names/ok.md"]


def test_a_skill_md_that_is_not_utf8_or_links_out_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "one" / "latin" / "SKILL.md", b"---\nname: latin\ndescription: caf\xe9\n---\n")
    with pytest.raises(ValueError, match=re.escape("SKILL.md is not UTF-8")):
        Server("s").add_skills(tmp_path / "one")
    outside = write(tmp_path / "elsewhere.md", "---\nname: linked\ndescription: from outside\n---\n")
    (tmp_path / "two" / "linked").mkdir(parents=True)
    (tmp_path / "two" / "linked" / "SKILL.md").symlink_to(outside)
    with pytest.raises(ValueError, match=re.escape("SKILL.md is not a regular file inside the skill's folder")):
        Server("s").add_skills(tmp_path / "two")


async def test_files_of_unknown_kinds_are_text_when_utf8_and_blobs_otherwise(tmp_path: Path) -> None:
    write(tmp_path / "kinds" / "SKILL.md", "---\nname: kinds\ndescription: odd files\n---\n")
    write(tmp_path / "kinds" / "notes.unknownext", "plain words\n")
    write(tmp_path / "kinds" / "data.unknownext2", b"\xff\x00\xfe")
    srv = Server("kinds")
    srv.add_skills(tmp_path)
    (text,) = (await call(srv, "resources/read", {"uri": "skill://kinds/notes.unknownext"}))["contents"]
    assert (text["mimeType"], text["text"]) == ("text/plain", "plain words\n")
    (blob,) = (await call(srv, "resources/read", {"uri": "skill://kinds/data.unknownext2"}))["contents"]
    assert (blob["mimeType"], base64.b64decode(blob["blob"])) == ("application/octet-stream", b"\xff\x00\xfe")


async def test_a_dynamic_file_whose_function_returns_no_content_fails_only_that_read() -> None:
    srv = Server("broken")
    srv.add_skill("broken", "returns the wrong thing", "fine", files={"bad.md": lambda: 42})
    error = await refused(srv, "resources/read", {"uri": "skill://broken/bad.md"})
    assert error.code == -32603
    assert (await call(srv, "resources/read", {"uri": "skill://broken/SKILL.md"}))["contents"][0]["text"].endswith("fine")


def test_skills_of_two_directories_may_not_nest(tmp_path: Path) -> None:
    write(tmp_path / "one" / "outer" / "SKILL.md", "---\nname: outer\ndescription: x\n---\n")
    write(tmp_path / "two" / "inner" / "SKILL.md", "---\nname: inner\ndescription: y\n---\n")
    srv = Server("s")
    srv.add_skills(tmp_path / "one")
    with pytest.raises(ValueError, match="would nest; only the skills of one directory may nest"):
        srv.add_skills(tmp_path / "two", prefix="outer")
    assert srv.add_skills(tmp_path / "two", prefix="elsewhere") == ["skill://elsewhere/inner/SKILL.md"]


# --- nested skills: one read of each file, links judged by the innermost skill -------------------


async def test_a_nested_skill_shares_one_read_and_a_link_out_of_it_is_in_no_skill(tmp_path: Path) -> None:
    from mcpkit.server.definitions.skill_folders import load_directory

    root = tmp_path / "skills"
    write(root / "outer" / "SKILL.md", "---\nname: outer\ndescription: holds another\n---\n")
    write(root / "outer" / "shared.md", "outer's own\n")
    write(root / "outer" / "inner" / "SKILL.md", "---\nname: inner\ndescription: nested\n---\n")
    write(root / "outer" / "inner" / "data.md", "inner data\n")
    (root / "outer" / "inner" / "up.md").symlink_to(root / "outer" / "shared.md")  # out of inner, into outer
    (root / "outer" / "near.md").symlink_to(root / "outer" / "inner" / "data.md")  # inside outer: served by outer

    outer, inner = load_directory(root)
    assert (outer.uri, inner.uri) == ("skill://outer/SKILL.md", "skill://outer/inner/SKILL.md")
    by_uri = {f.uri: f for f in outer.files}
    for f in inner.files[1:]:
        assert by_uri[f.uri] is f  # the very object the outer skill holds: one read

    srv = Server("nested", page_size=1000)
    srv.add_skills(root)
    entries = {e["uri"]: e for e in (await call(srv, "skills/list"))["skills"]}
    inner_files = [r["uri"] for r in entries["skill://outer/inner/SKILL.md"]["resources"]]
    outer_files = [r["uri"] for r in entries["skill://outer/SKILL.md"]["resources"]]
    assert inner_files == ["skill://outer/inner/SKILL.md", "skill://outer/inner/data.md"]
    assert "skill://outer/inner/up.md" not in outer_files
    assert "skill://outer/near.md" in outer_files
    digests = {r["uri"]: r["digest"] for e in entries.values() for r in e["resources"]}
    assert digests["skill://outer/inner/data.md"] == digests["skill://outer/near.md"]
    await refused(srv, "resources/read", {"uri": "skill://outer/inner/up.md"})
    listed = await call(srv, "resources/directory/read", {"uri": "skill://outer/inner"})
    assert "skill://outer/inner/up.md" not in [r["uri"] for r in listed["resources"]]


def test_a_file_swapped_for_a_link_out_while_the_folder_is_read_is_not_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextlib import nullcontext

    from mcpkit.server.definitions.skill_folders import load_directory

    root = tmp_path / "skills"
    write(root / "racy" / "SKILL.md", "---\nname: racy\ndescription: d\n---\n")
    doc = write(root / "racy" / "doc.md", "harmless\n")
    secret = write(tmp_path / "secret.txt", "SECRET\n")
    real_scandir = os.scandir

    class Entry:
        """A listed entry that, once asked whether it is a link, is swapped for one."""

        def __init__(self, entry: os.DirEntry[str]) -> None:
            self._entry, self.name, self.path = entry, entry.name, entry.path

        def is_symlink(self) -> bool:
            answer = self._entry.is_symlink()
            if self.name == "doc.md" and not doc.is_symlink():
                doc.unlink()
                doc.symlink_to(secret)  # after the listing was taken, before the file is opened
            return answer

        def is_dir(self, *, follow_symlinks: bool = True) -> bool:
            return self._entry.is_dir(follow_symlinks=follow_symlinks)

    def scandir(path: Any) -> Any:
        with real_scandir(path) as it:
            return nullcontext([Entry(e) for e in it])

    monkeypatch.setattr(os, "scandir", scandir)
    (skill,) = load_directory(root)
    assert doc.is_symlink()
    assert [f.uri for f in skill.files] == ["skill://racy/SKILL.md"]
    assert all(b"SECRET" not in (f.data or b"") for f in skill.files)


def test_a_folder_name_with_at_does_not_become_userinfo(tmp_path: Path) -> None:
    from mcpkit.server.definitions.skill_folders import load_directory

    root = tmp_path / "skills"
    write(root / "a@b" / "demo" / "SKILL.md", "---\nname: demo\ndescription: d\n---\n")
    (skill,) = load_directory(root)
    assert skill.uri == "skill://a%40b/demo/SKILL.md"  # not userinfo "a", host "b"
    (skill,) = load_directory(root, "acme")
    assert skill.uri == "skill://acme/a@b/demo/SKILL.md"


ROUND_TRIP_VALUES: list[Any] = [
    1e100,
    -1e-7,
    1e16,
    5e-324,
    -0.0,
    1.5,
    2**63 - 1,
    "a\x85b",
    "a\x7fb",
    "a\x90b",
    "\ufffe\uffff",
    "a\u2028---\u2029b",
    "\ufeffz",
    "\x00\x01\x1b\t\r\n",
    'quote " and \\ backslash',
    "\U0001f600 emoji",
    "yes",
    "null",
    "",
    [1.0, "no", {"nested": "\x85"}],
    {"x\u2028": [None, True, 1e-300]},
]


@pytest.mark.parametrize("value", ROUND_TRIP_VALUES, ids=[repr(v)[:24] for v in ROUND_TRIP_VALUES])
async def test_a_code_skill_frontmatter_reads_back_through_pyyaml_as_the_same_value(value: Any) -> None:
    from mcpkit.client.skills import parse_frontmatter as client_parse
    from mcpkit.server.definitions.skills import render_frontmatter

    frontmatter = {"name": "demo", "description": "d", "x": value}
    block = render_frontmatter(frontmatter)
    assert yaml.safe_load(block.strip("-\n")) == frontmatter
    assert client_parse(block + "body\n")[0] == frontmatter
    srv = Server("round-trip")
    uri = srv.add_skill("demo", "d", "body", frontmatter={"x": value})
    async with Client(srv) as client:
        skill = await client.load_skill(uri)  # mcpkit's client takes mcpkit's code skill
    assert skill.frontmatter["x"] == value


async def test_a_legacy_session_may_carry_extensions_but_never_the_skills_one() -> None:
    srv = Server("both")
    srv.add_ui("ui://w/v.html", "<html></html>")  # MCP Apps declares itself in both eras
    srv.add_skill("demo", "d", "body")
    async with Client(srv, ClientOptions(protocol_version=LEGACY, apps=True)) as client:
        extensions = client.server_capabilities.get("extensions")
    assert isinstance(extensions, dict)
    assert "io.modelcontextprotocol/ui" in extensions
    assert "io.modelcontextprotocol/skills" not in extensions


def test_the_definitions_module_exports_textual_and_derives_directories() -> None:
    from mcpkit.server.definitions import skills as defs

    assert "textual" in defs.__all__
    skill = defs.skill_from_code("demo", "d", "body", files={"a/b/c.md": "x"}, frontmatter=None, prefix=None)
    assert skill.directories == {"skill://demo", "skill://demo/a", "skill://demo/a/b"}
    with pytest.raises(TypeError):
        defs.SkillDef(uri="u", root="r", frontmatter={}, files=[], directories={"x"})  # type: ignore[call-arg]


def test_one_directory_added_twice_under_nested_prefixes_may_not_nest(tmp_path: Path) -> None:
    write(tmp_path / "skills" / "outer" / "SKILL.md", "---\nname: outer\ndescription: x\n---\n")
    write(tmp_path / "skills" / "outer" / "inner" / "SKILL.md", "---\nname: inner\ndescription: y\n---\n")
    srv = Server("s")
    assert srv.add_skills(tmp_path / "skills", prefix="x") == ["skill://x/outer/SKILL.md", "skill://x/outer/inner/SKILL.md"]
    with pytest.raises(ValueError, match="would nest"):  # inside skill://x/outer, missing from its entry
        srv.add_skills(tmp_path / "skills", prefix="x/outer")
    assert srv.add_skills(tmp_path / "skills", prefix="y") == ["skill://y/outer/SKILL.md", "skill://y/outer/inner/SKILL.md"]
    assert len(srv.reload_skills()) == 4


def test_a_removed_directory_skill_is_served_again_by_the_next_reload(tree: Path) -> None:
    srv = Server("s")
    srv.add_skills(tree)
    made = srv.add_skill("made", "in code", "body")
    srv.remove_skill("skill://acme/billing/refunds/SKILL.md")
    assert "skill://acme/billing/refunds/SKILL.md" in srv.reload_skills()  # as docs/skills.md says
    srv.remove_skill(made)
    srv.reload_skills()
    with pytest.raises(KeyError):
        srv.remove_skill(made)  # a code skill removed stays removed


def test_a_folder_named_skill_md_makes_no_nested_skill(tmp_path: Path) -> None:
    from mcpkit.server.definitions.skill_folders import load_directory

    root = tmp_path / "skills"
    write(root / "outer" / "SKILL.md", "---\nname: outer\ndescription: x\n---\n")
    write(root / "outer" / "odd" / "SKILL.md" / "inside.md", "a folder, not a skill's SKILL.md\n")
    (skill,) = load_directory(root)
    assert "skill://outer/odd/SKILL.md/inside.md" in [f.uri for f in skill.files]
