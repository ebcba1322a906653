#!/usr/bin/env python3
"""Mutation testing of the error-model core and the security-bearing modules with mutmut
(docs/testing.md).

Each module is mutated on its own, in a scratch copy of the repository (the checkout is
never touched), against only the tests that are about it; mutmut then runs, for each
mutant, only the selected tests that execute the mutated function. The equivalent mutants
listed in scripts/mutation_equivalents.toml (each with its reason) are left out of the
score: score = killed / (mutants - equivalent).

    .venv/bin/python scripts/mutation.py                 # every module
    .venv/bin/python scripts/mutation.py engine errors   # some of them
    .venv/bin/python scripts/mutation.py --keep engine   # keep the scratch copy (mutmut show/browse)

Exit status: 0 when every module run reaches its target score, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENTS = ROOT / "scripts" / "mutation_equivalents.toml"


@dataclass(frozen=True)
class Target:
    source: str
    tests: tuple[str, ...]
    min_score: float = 0.98
    #: Extra environment for the test runs.
    env: tuple[tuple[str, str], ...] = ()


#: What is mutated, against which tests, and the score it must reach: the one source of each
#: module's test selection (pyproject.toml has no [tool.mutmut] section; this script writes one
#: per module into its scratch copy). A hand run is ``scripts/mutation.py --keep NAME`` and then
#: ``mutmut browse`` in the scratch copy it names.
#: The error-model core, then the modules where a silent regression would let someone in or
#: leak what is someone else's.
TARGETS: dict[str, Target] = {
    "engine": Target(
        "src/mcpkit/protocol/engine.py",
        ("tests/unit/protocol/test_engine.py", "tests/unit/protocol/test_engine_edges.py"),
    ),
    "errors": Target(
        "src/mcpkit/protocol/errors.py",
        (
            "tests/unit/protocol/test_flatten.py",
            "tests/unit/protocol/test_error_values.py",
            "tests/unit/protocol/test_engine_edges.py",
            "tests/unit/protocol/test_error_mapping.py",
        ),
    ),
    "wire_errors": Target(
        "src/mcpkit/protocol/wire_errors.py",
        (
            "tests/unit/protocol/test_error_mapping.py",
            "tests/unit/server/test_errors.py",
            "tests/e2e/http/test_error_status.py",
        ),
    ),
    "validate": Target(
        "src/mcpkit/server/validate.py",
        (
            "tests/unit/server/test_validator_reasons.py",
            "tests/unit/server/test_validator_differential.py",
            "tests/unit/server/test_flat_schema.py",
        ),
        # The generated cases are a net for disagreements; a mutant is killed by the examples.
        # 1,000 cases per surviving mutant would make this module alone take half an hour.
        env=(("MCPKIT_DIFF_EXAMPLES", "100"),),
    ),
    "flat_schema": Target(
        "src/mcpkit/server/flat_schema.py",
        (
            "tests/unit/server/test_flat_schema.py",
            "tests/unit/server/test_validator_reasons.py",
            "tests/unit/server/test_validator_differential.py",
        ),
        env=(("MCPKIT_DIFF_EXAMPLES", "100"),),
    ),
    "schema_subset": Target(
        "src/mcpkit/server/schema_subset.py",
        ("tests/unit/server/test_validator_reasons.py", "tests/unit/server/test_validator_differential.py"),
        env=(("MCPKIT_DIFF_EXAMPLES", "100"),),
    ),
    "cursors": Target(
        "src/mcpkit/protocol/cursors.py",
        ("tests/unit/protocol/test_error_mapping.py", "tests/unit/server/test_features.py"),
    ),
    "request_state": Target(
        "src/mcpkit/protocol/request_state.py",
        ("tests/unit/protocol/test_request_state.py", "tests/unit/server/test_interactive.py"),
    ),
    "verifiers": Target(
        "src/mcpkit/auth/verifiers.py",
        (
            "tests/e2e/auth/test_verifiers.py",
            "tests/e2e/auth/test_resource_server.py",
            "tests/e2e/auth/test_token_expiry.py",
            "tests/unit/auth/test_resource_server_settings.py",
        ),
    ),
    "auth_server": Target(
        "src/mcpkit/auth/server.py",
        (
            "tests/unit/auth/test_resource_server_settings.py",
            "tests/e2e/auth/test_resource_server.py",
            "tests/e2e/auth/test_token_expiry.py",
        ),
    ),
    "edge_auth": Target(
        "src/mcpkit/transports/http/server/edge_auth.py",
        ("tests/e2e/auth/test_edge_auth.py", "tests/e2e/auth/test_resource_server.py", "tests/hostile/test_principals.py"),
    ),
    "host_origin": Target(
        "src/mcpkit/transports/http/server/security.py",
        ("tests/e2e/http/test_host_origin.py", "tests/hostile/test_probe_hosts.py"),
    ),
    "tasks": Target(
        "src/mcpkit/server/tasks.py",
        ("tests/unit/server/test_tasks.py", "tests/unit/server/test_tasks_edges.py", "tests/hostile/test_principals.py"),
    ),
}

#: mutmut's statuses that count as detected. "timeout": the mutant made a test hang, which
#: the suite's own timeout would have reported.
_KILLED = frozenset({"killed", "timeout", "caught by type check"})


@dataclass
class Survivor:
    name: str
    function: str
    before: str
    after: str
    status: str


@dataclass
class Result:
    module: str
    mutants: int = 0
    killed: int = 0
    equivalent: int = 0
    survivors: list[Survivor] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def score(self) -> float:
        scored = self.mutants - self.equivalent
        return self.killed / scored if scored else 1.0


def _mutmut() -> str:
    """The mutmut executable next to this interpreter; installs the ``mutation`` extra
    of pyproject.toml first if it is missing."""
    exe = Path(sys.executable).parent / "mutmut"
    if not exe.exists():
        extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["mutation"]
        print(f"installing {' '.join(extra)} ...", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", *extra], check=True)
    return str(exe)


def _pyproject_for(target: Target) -> str:
    """The repository's pyproject.toml with its [tool.mutmut] section replaced by one for
    ``target`` alone."""
    text = (ROOT / "pyproject.toml").read_text()
    text = re.sub(r"(?ms)^\[tool\.mutmut\]\n.*?(?=^\[|\Z)", "", text)
    tests = ", ".join(f'"{t}"' for t in target.tests)
    return (
        text
        + "\n[tool.mutmut]\n"
        + 'source_paths = ["src"]\n'
        + f'only_mutate = ["{target.source}"]\n'
        + f"pytest_add_cli_args_test_selection = [{tests}]\n"
        # in mutmut's own process, not on the suite's xdist workers (pyproject's addopts)
        + 'pytest_add_cli_args = ["-p", "no:cacheprovider", "-n0"]\n'
        # Workers fork from a process that only collected the tests: one that ran them holds
        # thread pools (sync handlers run in threads) whose threads a fork does not copy.
        + 'process_isolation = "forkserver"\n'
    )


def _readable(mutant: str) -> str:
    """``mcpkit.m.xǁClassǁmethod__mutmut_3`` -> ``mcpkit.m.Class.method``."""
    module, _, mangled = mutant.rpartition(".")
    mangled = mangled.rpartition("__mutmut_")[0]
    if mangled.startswith("xǁ"):
        return f"{module}.{'.'.join(mangled.split('ǁ')[1:])}"
    return f"{module}.{mangled[2:]}"


def _normal(lines: Iterable[str]) -> str:
    return "\n".join(" ".join(line.split()) for line in lines)


def _diff(mutmut: str, cwd: Path, name: str) -> tuple[str, str]:
    """The lines the mutant removes and adds (whitespace-normalised)."""
    out = subprocess.run([mutmut, "show", name], cwd=cwd, capture_output=True, text=True, check=True).stdout
    body = out.splitlines()[3:]  # "# name: status", "--- path", "+++ path"
    before = [line[1:] for line in body if line.startswith("-")]
    after = [line[1:] for line in body if line.startswith("+")]
    return _normal(before), _normal(after)


def _load_equivalents() -> list[dict[str, str]]:
    entries: list[dict[str, str]] = tomllib.loads(EQUIVALENTS.read_text()).get("equivalent", [])
    for entry in entries:
        missing = {"function", "before", "after", "reason"} - entry.keys()
        if missing or not entry["reason"].strip():
            raise SystemExit(f"{EQUIVALENTS.name}: an entry lacks {sorted(missing) or ['a reason']}: {entry}")
    return entries


def run_module(name: str, target: Target, scratch: Path, mutmut: str, children: int, log: Path) -> Result:
    work = scratch / name
    work.mkdir()
    shutil.copytree(ROOT / "src", work / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests", work / "tests", ignore=shutil.ignore_patterns("__pycache__", ".hypothesis"))
    (work / "pyproject.toml").write_text(_pyproject_for(target))
    env = dict(os.environ) | dict(target.env)
    # Subprocesses a test spawns (a stdio server) import the mutated copy too, not the editable
    # install. The directory must exist before mutmut starts: Python caches "no such directory"
    # for a sys.path entry and would never look there again.
    (work / "mutants" / "src").mkdir(parents=True)
    env["PYTHONPATH"] = os.pathsep.join([str(work / "mutants" / "src"), *filter(None, [env.get("PYTHONPATH")])])
    started = time.monotonic()
    with log.open("ab") as out:
        out.write(f"\n===== {name}: {target.source} against {' '.join(target.tests)}\n".encode())
        out.flush()
        proc = subprocess.run([mutmut, "run", "--max-children", str(children)], cwd=work, env=env, stdout=out, stderr=out)
    if proc.returncode != 0:
        raise SystemExit(f"mutmut failed on {name} (exit {proc.returncode}); see {log}")
    result = Result(name, seconds=time.monotonic() - started)
    listing = subprocess.run([mutmut, "results", "--all", "true"], cwd=work, capture_output=True, text=True, check=True).stdout
    statuses = dict(line.strip().rsplit(": ", 1) for line in listing.splitlines() if ": " in line)
    result.mutants = len(statuses)
    result.killed = sum(status in _KILLED for status in statuses.values())
    alive = sorted((m, s) for m, s in statuses.items() if s not in _KILLED)
    with ThreadPoolExecutor(max_workers=4) as pool:
        diffs = list(pool.map(lambda ms: _diff(mutmut, work, ms[0]), alive))
    for (mutant, status), (before, after) in zip(alive, diffs, strict=True):
        result.survivors.append(Survivor(mutant, _readable(mutant), before, after, status))
    return result


def apply_equivalents(result: Result, entries: list[dict[str, str]], used: set[int]) -> list[Survivor]:
    """Count the survivors that an entry of the equivalents file describes; return the rest."""
    rest = []
    for s in result.survivors:
        hit = next(
            (
                i
                for i, e in enumerate(entries)
                if e["function"] == s.function and _normal(e["before"].splitlines()) == s.before
                if _normal(e["after"].splitlines()) == s.after
            ),
            None,
        )
        if hit is None:
            rest.append(s)
        else:
            used.add(hit)
            result.equivalent += 1
    return rest


def _toml_string(text: str) -> str:
    return "'''" + text + "'''" if "\n" in text or "'" in text else f"'{text}'"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("modules", nargs="*", help=f"modules to mutate: {', '.join(TARGETS)} (default: all)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copies (for mutmut show / browse)")
    parser.add_argument("--children", type=int, default=os.cpu_count() or 2, help="parallel mutant runs (default: cores)")
    args = parser.parse_args()
    names: list[str] = args.modules or list(TARGETS)
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        parser.error(f"unknown module {', '.join(unknown)}; choose from {', '.join(TARGETS)}")
    mutmut = _mutmut()
    entries = _load_equivalents()
    scratch = Path(tempfile.mkdtemp(prefix="mcpkit-mutation-"))
    log = scratch / "mutmut.log"
    results: list[tuple[Result, list[Survivor]]] = []
    used: set[int] = set()
    started = time.monotonic()
    try:
        for name in names:
            print(f"mutating {TARGETS[name].source} against {' '.join(TARGETS[name].tests)} ...", flush=True)
            result = run_module(name, TARGETS[name], scratch, mutmut, args.children, log)
            results.append((result, apply_equivalents(result, entries, used)))
    finally:
        if args.keep:
            print(f"scratch copies kept in {scratch} (cd {scratch}/<module> && mutmut browse)")
        else:
            shutil.rmtree(scratch, ignore_errors=True)

    for result, rest in results:
        if rest:
            print(f"\n{result.module}: {len(rest)} surviving mutants (kill them, or list them in {EQUIVALENTS.name})")
            for s in rest:
                print(f"\n[[equivalent]]  # {s.name}: {s.status}")
                print(f"function = {_toml_string(s.function)}")
                print(f"before = {_toml_string(s.before)}")
                print(f"after = {_toml_string(s.after)}")
                print("reason = ''")
    if len(names) == len(TARGETS):
        stale = [e for i, e in enumerate(entries) if i not in used]
        for e in stale:
            print(f"\nstale entry in {EQUIVALENTS.name} (no such surviving mutant): {e['function']}: {e['before']!r}")

    print(f"\n{'module':<12} {'mutants':>7} {'killed':>7} {'survived':>8} {'equivalent':>10} {'score':>7} {'target':>6}  time")
    ok = True
    for result, rest in results:
        target = TARGETS[result.module].min_score
        ok = ok and result.score >= target
        print(
            f"{result.module:<12} {result.mutants:>7} {result.killed:>7} {len(rest):>8} {result.equivalent:>10}"
            f" {result.score:>7.1%} {target:>6.0%}  {result.seconds:.0f}s"
        )
    print(f"total time {time.monotonic() - started:.0f}s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
