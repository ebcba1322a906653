"""Compare the legs of a conformance run with scripts/conformance-expected-failures.txt.

    python scripts/conformance_check.py EXPECTED_FAILURES EXPECTED_SKIPS RUN_DIR LEG...

``scripts/conformance.sh`` calls this after running the suite. Each ``LEG`` (for
example ``server@2026-07-28``, ``server-sse@2025-11-25`` or ``client@bare``) left ``RUN_DIR/LEG.log`` (the
suite's output) and ``RUN_DIR/LEG/`` (its ``--output-dir``: one ``checks.json`` per
scenario). A scenario fails when any of its checks is ``FAILURE`` or ``WARNING``,
the rule of the suite's own ``--expected-failures`` baseline; an entry
``SCENARIO:CHECK-ID`` excuses that one check (every occurrence of the id) and
nothing else. A check the suite SKIPPED counts too, unless EXPECTED_SKIPS (same format)
lists it: a scenario skipped for lack of support is a failure, and only a skip the suite
makes whatever the implementation does (a check that does not apply to the revision, or
one the suite's own harness cannot run yet) is listed, with its reason. Prints, per leg,
the suite's totals and what was expected, unexpected or stale, with the suite's messages
for the unexpected ones; exits 1 if anything failed unexpectedly or a listed entry
passed, 2 for a malformed list or a leg whose results are missing.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

SIDES = ("server", "server-sse", "proxy", "client")
LEG_VERSIONS = ("2025-11-25", "2026-07-28", "bare")
SEVERITY = {"FAILURE": 3, "WARNING": 2, "SUCCESS": 1}
TIMESTAMP = re.compile(r"-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$")
SUMMARY_LINE = re.compile(r"^[✓✗] (\S+): (\d+) passed, (\d+) failed")
SKIPPED_LINE = re.compile(r"^- (\S+): skipped$")
TOTAL_LINE = re.compile(r"^Total: .*")


@dataclass(frozen=True)
class Entry:
    side: str  # "server" (both response modes), "server-sse" (the SSE mode only), "proxy" or "client"
    version: str | None  # None: every leg of that side
    scenario: str
    check: str | None  # None: the whole scenario
    reason: str
    line: int

    def applies(self, leg: str) -> bool:
        side, version = leg.split("@")
        sides = ("server", "server-sse") if self.side == "server" else (self.side,)
        return side in sides and self.version in (None, version)

    @property
    def name(self) -> str:
        return f"{self.scenario}:{self.check}" if self.check else self.scenario


def parse_expected(path: Path) -> list[Entry]:
    """The entries of the expected-failures list; raises ``SystemExit(2)`` on a bad line."""
    entries = []
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 3:
            raise SystemExit(_bad(path, number, "expected: LEG SCENARIO[:CHECK-ID] REASON"))
        leg, target, reason = parts
        side, _, version = leg.partition("@")
        if side not in SIDES or (version and version not in LEG_VERSIONS):
            known = f"{'|'.join(SIDES)}, optionally @{'|@'.join(LEG_VERSIONS)}"
            raise SystemExit(_bad(path, number, f"unknown leg {leg!r} ({known})"))
        scenario, _, check = target.partition(":")
        entries.append(Entry(side, version or None, scenario, check or None, reason, number))
    return entries


def _bad(path: Path, number: int, message: str) -> int:
    print(f"{path}:{number}: {message}", file=sys.stderr)
    return 2


@dataclass
class Leg:
    name: str
    scenarios: dict[str, list[dict[str, object]]]  # scenario -> its checks ([] if none were saved)
    summary_failed: dict[str, int]  # scenario -> failed count from the suite's summary
    total: str


def load_leg(run_dir: Path, leg: str) -> Leg:
    """What the suite reported for one leg: its summary lines and every checks.json."""
    log = run_dir / f"{leg}.log"
    if not log.exists():
        raise SystemExit(_missing(leg, f"no {log}"))
    summary_failed: dict[str, int] = {}
    total = ""
    for line in log.read_text(errors="replace").splitlines():
        if m := SUMMARY_LINE.match(line):
            summary_failed[m.group(1)] = int(m.group(3))
        elif m := SKIPPED_LINE.match(line):
            summary_failed[m.group(1)] = 0
        elif TOTAL_LINE.match(line):
            total = line
    if not total:
        raise SystemExit(_missing(leg, f"the suite printed no totals (see {log})"))
    scenarios: dict[str, list[dict[str, object]]] = {name: [] for name in summary_failed}
    out = run_dir / leg
    for checks in sorted(out.rglob("checks.json")) if out.exists() else []:
        name = TIMESTAMP.sub("", checks.parent.relative_to(out).as_posix())
        if not leg.startswith("client"):  # the server scenarios' folders
            name = name.removeprefix("server-")
        scenarios[name] = json.loads(checks.read_text())
    return Leg(leg, scenarios, summary_failed, total)


def _missing(leg: str, why: str) -> int:
    print(f"{leg}: results missing: {why}", file=sys.stderr)
    return 2


def failing_checks(checks: list[dict[str, object]]) -> dict[str, dict[str, object]]:
    """The failing checks by id, each id's occurrences collapsed to the most severe."""
    worst: dict[str, dict[str, object]] = {}
    for check in checks:
        status, cid = str(check.get("status")), str(check.get("id"))
        if status == "INFO":
            continue
        if cid not in worst or SEVERITY.get(status, 0) >= SEVERITY.get(str(worst[cid].get("status")), 0):
            worst[cid] = check
    return {cid: c for cid, c in worst.items() if c.get("status") in ("FAILURE", "WARNING")}


def skipped_checks(checks: list[dict[str, object]]) -> set[str]:
    """The ids of the checks the suite skipped, in any of their occurrences (a check run
    per method may be skipped for some methods and pass for others)."""
    return {str(c.get("id")) for c in checks if c.get("status") == "SKIPPED"}


def compare_skips(leg: Leg, skips: list[Entry]) -> tuple[list[str], list[str], list[str]]:
    """(expected, unexpected, stale) skips for one leg."""
    mine = [e for e in skips if e.applies(leg.name)]
    expected: list[str] = []
    unexpected: list[str] = []
    stale: list[str] = []
    for scenario, checks in sorted(leg.scenarios.items()):
        skipped = skipped_checks(checks)
        listed = [e for e in mine if e.scenario == scenario]
        for cid in sorted(skipped):
            entry = next((e for e in listed if e.check in (None, cid)), None)
            if entry is not None:
                expected.append(f"{scenario}:{cid}  ({entry.reason})")
            else:
                check = next(c for c in checks if str(c.get("id")) == cid)
                message = " ".join(str(check.get("errorMessage") or check.get("description") or "").split())
                unexpected.append(f"{scenario}:{cid} SKIPPED: {message[:300]}")
        for entry in listed:
            if checks and (not skipped if entry.check is None else entry.check not in skipped):
                stale.append(f"{entry.name}  ({entry.reason})")
    return expected, unexpected, stale


def compare(leg: Leg, entries: list[Entry]) -> tuple[list[str], list[str], list[str]]:
    """(expected, unexpected, stale) for one leg; unexpected lines carry the suite's messages."""
    mine = [e for e in entries if e.applies(leg.name)]
    whole = {e.scenario: e for e in mine if e.check is None}
    by_check = {(e.scenario, e.check): e for e in mine if e.check is not None}
    expected: list[str] = []
    unexpected: list[str] = []
    stale: list[str] = []
    for scenario, checks in sorted(leg.scenarios.items()):
        failing = failing_checks(checks)
        if not checks and leg.summary_failed.get(scenario, 0) > 0:
            failing = {scenario: {"status": "FAILURE", "errorMessage": "no checks.json saved; see the leg's log"}}
        if scenario in whole:
            (expected if failing else stale).append(f"{scenario}  ({whole[scenario].reason})")
            continue
        for cid, check in failing.items():
            entry = by_check.get((scenario, cid))
            if entry is not None:
                expected.append(f"{scenario}:{cid}  ({entry.reason})")
            else:
                message = " ".join(str(check.get("errorMessage") or check.get("description") or "").split())
                unexpected.append(f"{scenario}:{cid} {check.get('status')}: {message[:300]}")
        statuses = {str(c.get("id")): str(c.get("status")) for c in checks if c.get("status") != "INFO"}
        for (s, cid), entry in by_check.items():
            if s == scenario and cid not in failing and statuses.get(cid) == "SUCCESS":
                stale.append(f"{scenario}:{cid}  ({entry.reason})")
    return expected, unexpected, stale


def main() -> None:
    if len(sys.argv) < 5:
        raise SystemExit(__doc__)
    entries = parse_expected(Path(sys.argv[1]))
    skips = parse_expected(Path(sys.argv[2]))
    run_dir = Path(sys.argv[3])
    legs = [load_leg(run_dir, leg) for leg in sys.argv[4:]]
    bad = 0
    print("\n=== conformance: mcpkit against the suite, per leg ===")
    for leg in legs:
        expected, unexpected, stale = compare(leg, entries)
        skipped, unexpected_skips, stale_skips = compare_skips(leg, skips)
        unexpected += unexpected_skips
        stale += stale_skips
        bad += len(unexpected) + len(stale)
        print(f"\n{leg.name}: the suite's {leg.total}")
        counts = (
            f"{len(expected)} expected failures, {len(skipped)} expected skips, {len(unexpected)} unexpected, {len(stale)} stale"
        )
        print(f"  {len(leg.scenarios)} scenarios; {counts}")
        for line in unexpected:
            print(f"  UNEXPECTED {line}")
        for line in stale:
            print(f"  STALE (passes or runs now; remove it from its list) {line}")
    verdict = "OK" if bad == 0 else "FAILED"
    print(f"\nconformance: {len(legs)} legs, {bad} unexpected failures or skips, or stale entries: {verdict}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
