#!/usr/bin/env bash
# Instructions of one kg-core maintenance pass, for an older commit and the working
# tree side by side (callgrind; wall-clock criterion rows move a few per cent between
# runs on a shared machine, instruction counts do not).
#
#   scripts/count-instructions-core.sh <base-commit> [passes]
#
# Builds crates/kg-core/examples/maintenance_pass.rs in both trees (copied into the
# base's worktree, $TMPDIR/kg-bench-<commit>, as scripts/bench-compare.sh makes it),
# runs each under valgrind with `passes` passes (default 5) and with none, and prints
# the difference over the passes: the first pass after load and the tick at the fixed
# point, at 1,000, 10,000 and 100,000 nodes. Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."

base=${1:?usage: scripts/count-instructions-core.sh <base-commit> [passes]}
passes=${2:-5}
command -v valgrind >/dev/null || { echo "needs valgrind: sudo apt-get install valgrind" >&2; exit 1; }
base_sha=$(git rev-parse --short "$base")
base_tree=${KG_COMPARE_TREE:-${TMPDIR:-/tmp}/kg-bench-$base_sha}
if [ ! -d "$base_tree" ]; then
    git worktree add --detach "$base_tree" "$base_sha" >/dev/null
fi
mkdir -p "$base_tree/crates/kg-core/examples"
cp crates/kg-core/examples/maintenance_pass.rs "$base_tree/crates/kg-core/examples/"

example_of() { (cd "$1" && cargo build --release -q -p kg-core --example maintenance_pass) && echo "$1/target/release/examples/maintenance_pass"; }
before=$(example_of "$base_tree")
after=$(example_of "$PWD")

count() { # <binary> <mode> <nodes> <passes> <copies>: total instructions
    local out
    out=$(mktemp)
    valgrind --tool=callgrind --callgrind-out-file="$out" "$@" >/dev/null 2>&1
    sed -nE 's/^(summary|totals): ([0-9]+).*/\2/p' "$out" | head -1
    rm -f "$out"
}

echo "instructions per maintenance pass (callgrind): $passes passes less none, over $passes"
echo
echo "| pass | nodes | $base_sha | working tree | change |"
echo "|---|---|---|---|---|"
for mode in first-pass tick; do
    for nodes in 1000 10000 100000; do
        row=()
        for binary in "$before" "$after"; do
            ran=$(count "$binary" "$mode" "$nodes" "$passes" "$passes")
            idle=$(count "$binary" "$mode" "$nodes" 0 "$passes")
            row+=($(( (ran - idle) / passes )))
        done
        awk -v m="$mode" -v n="$nodes" -v b="${row[0]}" -v a="${row[1]}" \
            'BEGIN { printf "| %s | %d | %.0f | %.0f | %+.1f %% |\n", m, n, b, a, 100 * (a / b - 1) }'
    done
done
