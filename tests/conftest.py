"""The suite's layout as pytest sees it: which kind each test is, which of them a run
selects, and how many workers run them in parallel (docs/testing.md, "Running the tests").

Kinds, by the folder a test lives in (each folder's tests get the marker of its name):

==============  =============================================================  ==========
folder          what runs                                                      fast loop
==============  =============================================================  ==========
tests/unit/     in the test process: the protocol core, in-memory transports,  yes
                servers and clients served in memory, static checks
tests/e2e/      mcpkit's own processes and sockets (stdio, HTTP, SSE, auth,    no
                the command line)
tests/hostile/  attacks on real servers                                        no
tests/interop/  third-party peers (the official SDK, FastMCP, npm)             no
tests/nodes/    several nodes on a real redis-server behind HAProxy            no
tests/docs/     the docs site, every snippet, the examples and the cookbook    no
tests/perf/     the performance regression check                               no
==============  =============================================================  ==========

A test in tests/unit/ that also runs over a real transport marks that parameter ``e2e``
(``pytest.param("stdio", marks=pytest.mark.e2e)``): the fast loop runs its in-memory case.

Selection: plain ``pytest`` (no paths, no ``-m``) is the fast loop, everything but the slow
kinds; ``pytest --all`` is the whole suite, and fails unless every kind above collected
tests. Paths or ``-m`` given on the command line select exactly what they say. The run's
first and last lines say which selection ran.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support.peers import apps_schema, everything, inspector, node

__all__ = ["apps_schema", "everything", "inspector", "node"]  # session fixtures of the interop tests

TESTS = Path(__file__).resolve().parent

# Coverage (`--cov`; pyproject.toml: patch = ["subprocess"]) hands every child process the
# variable that makes it measure itself. Tracing every server a test spawns costs the run
# half its time again, and their code is measured in this process too; so only the command
# line's processes (support.cli), whose code runs nowhere else, get it back.
# An xdist worker starts its coverage after importing this file, so the session fixture
# below does it again there.


def _child_coverage_for_the_command_line_only() -> None:
    if "COVERAGE_PROCESS_CONFIG" in os.environ:
        os.environ["MCPKIT_TESTS_CHILD_COVERAGE"] = os.environ.pop("COVERAGE_PROCESS_CONFIG")


_child_coverage_for_the_command_line_only()


@pytest.fixture(autouse=True, scope="session")
def _child_coverage() -> None:
    _child_coverage_for_the_command_line_only()


#: The folders whose tests are slow kinds, each marked with its name; the fast loop leaves them out.
SLOW = ("e2e", "hostile", "interop", "nodes", "docs", "perf")
KINDS = ("unit", *SLOW)
FAST_LOOP = "not (" + " or ".join(SLOW) + ")"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--all",
        action="store_true",
        dest="whole_suite",
        help="run the whole suite (every kind: " + ", ".join(KINDS) + "); plain `pytest` runs the fast loop (tests/unit)",
    )


def pytest_configure(config: pytest.Config) -> None:
    for kind in KINDS:
        config.addinivalue_line("markers", f"{kind}: a test of tests/{kind}/ (set by tests/conftest.py from the folder)")


def _selection(config: pytest.Config) -> str:
    """``"all"`` (--all), ``"fast"`` (plain pytest) or ``"asked"`` (paths or -m given)."""
    if config.getoption("whole_suite"):
        return "all"
    if config.args_source == pytest.Config.ArgsSource.TESTPATHS and not config.option.markexpr:
        return "fast"
    return "asked"


def _kind(item: pytest.Item) -> str:
    parts = item.path.resolve().relative_to(TESTS).parts
    if len(parts) < 2 or parts[0] not in KINDS:
        raise pytest.UsageError(f"{item.nodeid}: every test lives in one of tests/{{{','.join(KINDS)}}}/")
    return parts[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kinds: dict[str, int] = dict.fromkeys(KINDS, 0)
    for item in items:
        kind = _kind(item)
        kinds[kind] += 1
        item.add_marker(kind)
    selection = _selection(config)
    if selection == "all" and config.args_source == pytest.Config.ArgsSource.TESTPATHS:
        empty = [kind for kind, count in kinds.items() if count == 0]
        if empty and not config.option.keyword and not config.option.markexpr:
            raise pytest.UsageError(f"--all collected no test in tests/{{{','.join(empty)}}}/: the whole suite did not run")
    if selection != "fast":
        return
    slow = set(SLOW)
    keep = [item for item in items if not slow & {mark.name for mark in item.iter_markers()}]
    dropped = [item for item in items if slow & {mark.name for mark in item.iter_markers()}]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def _describe(config: pytest.Config) -> str:
    selection = _selection(config)
    if selection == "all":
        return "the whole suite (--all): " + ", ".join(f"tests/{kind}" for kind in KINDS)
    if selection == "fast":
        return f"the FAST LOOP only (-m '{FAST_LOOP}'), not the whole suite: `pytest --all` runs everything"
    return "what the command line names (paths, -m or -k), with every kind it reaches"


def pytest_report_header(config: pytest.Config) -> str:
    return f"mcpkit selection: {_describe(config)}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    terminalreporter.write_line(f"mcpkit selection: {_describe(config)}", bold=True)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: three workers per core (at least two). Most of the suite waits — on
    processes starting, sockets, deadlines — rather than computing, so more workers than
    cores overlap the waits (on two cores: 4 workers 3:47, 6 workers 3:10, the whole
    suite); MCPKIT_TEST_WORKERS overrides."""
    if "MCPKIT_TEST_WORKERS" in os.environ:
        return int(os.environ["MCPKIT_TEST_WORKERS"])
    return max(2, 3 * (os.cpu_count() or 1))
