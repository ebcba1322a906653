"""Interop: another implementation of the skills extension reads mcpkit's skills. The MCP
Inspector's CLI (``--method skills/list --verify``, ``--method skills/get --verify``: its
SEP-2640 conformance and digest checks) against tests/support/servers/skills_target.py,
over stdio and Streamable HTTP; in the 2025-11-25 era, where the extension is not
served, it finds none declared."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from support.peers import Inspector
from support.ports import free_port
from support.processes import listening, server_command

RUN_LIMIT = 30.0  # seconds for one run of the CLI
pytestmark = pytest.mark.timeout(300)

SKILLS = {
    "skill://acme/billing/refunds/SKILL.md": 2,
    "skill://pdf-processing/SKILL.md": 5,
}  # the skills of scripts/conformance/skills/ and how many files each has


@pytest.fixture(scope="module")
def skills_url() -> Iterator[str]:
    port = free_port()
    with listening(server_command("skills_target", "--http", str(port)), port):
        yield f"http://127.0.0.1:{port}/mcp"


async def inspect(inspector: Inspector, era: str, target: list[str], *args: str) -> tuple[int, list[dict[str, Any]], str]:
    command = [*inspector.command, "-q", "--format", "json", "--protocol-era", era, *target, *args]
    with anyio.fail_after(RUN_LIMIT):
        proc = await anyio.run_process(command, env=inspector.env, check=False)
    lines = [json.loads(line) for line in proc.stdout.decode().splitlines() if line.startswith("{")]
    return proc.returncode, lines, proc.stderr.decode(errors="replace")


def target_of(where: str, url: str) -> list[str]:
    return server_command("skills_target") if where == "stdio" else [url]


@pytest.mark.parametrize("where", ["stdio", "http"])
async def test_the_inspector_verifies_every_skill_and_file(inspector: Inspector, skills_url: str, where: str) -> None:
    target = target_of(where, skills_url)
    status, reports, stderr = await inspect(inspector, "modern", target, "--method", "skills/list", "--verify")
    assert status == 0, stderr  # 7: a check failed; 8: something could not be checked
    assert {r["uri"]: len(r["files"]) for r in reports} == SKILLS
    for report in reports:
        assert (report["ok"], report["outcome"], report["conformance"], report["frontmatter"]) == (True, "verified", [], [])
        assert {f["status"] for f in report["files"]} == {"verified"}
        assert all(f["actualDigest"] == f["expectedDigest"] and f["actualSize"] == f["expectedSize"] for f in report["files"])
    uri = "skill://pdf-processing/SKILL.md"
    status, (one,), stderr = await inspect(inspector, "modern", target, "--method", "skills/get", "--uri", uri, "--verify")
    assert status == 0, stderr
    assert (one["uri"], one["outcome"], len(one["files"])) == (uri, "verified", 5)


async def test_in_the_legacy_era_the_inspector_finds_no_skills_declared(inspector: Inspector, skills_url: str) -> None:
    status, _, stderr = await inspect(inspector, "legacy", [skills_url], "--method", "skills/list")
    assert status == 1
    assert "skills_unsupported" in stderr
