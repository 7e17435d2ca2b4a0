#!/usr/bin/env bash
# The long versions of the reliability harnesses (crates/kg-server/tests/kg-server/):
#
#   crash/          kg-memory serve on a real disk under a mixed MCP + REST write load,
#                   SIGKILLed at random moments and restarted; every acknowledged write,
#                   file, .prev backup and session is checked after each kill.
#   concurrency.rs  21 clients at once (agents, graph-view editors, WebSocket
#                   subscribers, invariant writers and readers, the 1 s maintenance
#                   tick): no lost update, no deadlock, no torn read, no missed broadcast.
#   faults.rs       read-only storage root, full disk, graph files deleted or replaced
#                   under the server (needs root for the mounts; says so loudly if not).
#   hostile/        malformed and hostile input over the wire.
#
# `make test` runs the bounded versions (50 kills, scale 1; about half a minute of
# the test binary's time). This script runs them long:
#
#   scripts/reliability.sh                 500 kills, concurrency ×10, faults and hostile ×5
#   KG_CRASH_KILLS=2000 scripts/reliability.sh
#   KG_CRASH_SEED=0x1234 scripts/reliability.sh    replay a crash run (the seed is printed
#                                                  in every crash failure message)
#   PROFILE=release scripts/reliability.sh         run against an optimised build
#
# Knobs (environment): KG_CRASH_KILLS (500), KG_CRASH_SEED, KG_CRASH_SESSION_ROUNDS (30),
# KG_CONCURRENCY_SCALE (10), REPEAT (5: runs of faults and hostile), PROFILE (dev).
set -euo pipefail
cd "$(dirname "$0")/.."

export KG_CRASH_KILLS="${KG_CRASH_KILLS:-500}"
export KG_CRASH_SESSION_ROUNDS="${KG_CRASH_SESSION_ROUNDS:-30}"
export KG_CONCURRENCY_SCALE="${KG_CONCURRENCY_SCALE:-10}"
REPEAT="${REPEAT:-5}"
PROFILE="${PROFILE:-dev}"
cargo_test=(cargo test --profile "$PROFILE" -p kg-server --test kg-server)

step() { printf '\n==> %s\n' "$*"; }
run() {
    # run <label> <test filter> — prints the harness's own summary line and the time.
    local label=$1 filter=$2 start end
    start=$(date +%s%N)
    if ! "${cargo_test[@]}" -- "$filter" "${root_only[@]}" --nocapture --test-threads=1 >"$log" 2>&1; then
        cat "$log"
        printf '\n!! %s FAILED (log above)\n' "$label"
        exit 1
    fi
    end=$(date +%s%N)
    # (libtest prints a test's own output on the line of its name)
    grep -oE '(crash|concurrency|hostile): .*|test result.*' "$log" || true
    local ms=$(((end - start) / 1000000))
    printf '   %s: %d.%d s\n' "$label" $((ms / 1000)) $((ms % 1000 / 100))
}

# Tests that need root (#[ignore = "needs root: …"]) run too when we are root.
root_only=()
if [ "$(id -u)" = 0 ]; then
    root_only=(--include-ignored)
else
    echo "not root: the root-only fault tests (a full disk) are skipped"
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT

step "build ($PROFILE)"
"${cargo_test[@]}" --no-run

step "crash: $KG_CRASH_KILLS SIGKILLs under load (+ $KG_CRASH_SESSION_ROUNDS rounds of concurrent registrations)"
run "crash" "crash::"

step "concurrency: 21 clients, scale $KG_CONCURRENCY_SCALE"
run "concurrency" "concurrency::"

step "faults and hostile input, $REPEAT runs"
for i in $(seq 1 "$REPEAT"); do
    run "faults run $i" "faults::"
    run "hostile run $i" "hostile::"
done

step "all reliability harnesses passed"
