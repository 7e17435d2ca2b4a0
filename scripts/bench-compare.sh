#!/usr/bin/env bash
# Benchmarks an older commit and the working tree side by side, in one run.
#
#   scripts/bench-compare.sh <base-commit> [rounds]
#
# Builds the base in a git worktree with its own target folder, both kept for the
# next run: $KG_COMPARE_TREE (default $TMPDIR/kg-bench-<commit>) and that path
# with -target appended. Then it runs kg-core's criterion benches
# (`memory`, `write_through`) and kg-server's `load` bench for the base and for the
# working tree, alternating, `rounds` times (default 2), and prints one table per
# bench: the median over the rounds of each measurement, before and after. The load
# bench is a client driving a `kg-memory` server: both sides run the working tree's
# driver, against the base's server and then the working tree's (KG_MEMORY_BIN), so
# only the server differs.
# Criterion runs shortened (1 s warm-up, 3 s measurement); the load bench with fewer
# requests (the KG_BENCH_* knobs below). KG_COMPARE_BENCHES picks some of the
# three (e.g. "load"). Quiet the machine first: the numbers are wall clock.
set -euo pipefail
cd "$(dirname "$0")/.."

base=${1:?usage: scripts/bench-compare.sh <base-commit> [rounds]}
rounds=${2:-2}
base_sha=$(git rev-parse --short "$base")
base_tree=${KG_COMPARE_TREE:-${TMPDIR:-/tmp}/kg-bench-$base_sha}
base_target=$base_tree-target
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

if [ ! -d "$base_tree" ]; then
    # (a tree given in KG_COMPARE_TREE must already hold the base commit)
    git worktree add --detach "$base_tree" "$base_sha" >/dev/null
fi

# bench_executables <source tree> <target dir>: "name path" per bench binary.
bench_executables() {
    (cd "$1" && CARGO_TARGET_DIR=$2 cargo bench --no-run -p kg-core -p kg-server 2>&1) |
        sed -nE 's/^ *Executable benches\/(memory|write_through|load)(\.rs|\/main\.rs) \((.*)\)$/\1 \3/p' |
        while read -r name path; do
            case $path in /*) ;; *) path=$1/$path ;; esac
            echo "$name $path"
        done
}

echo "building the benches of $base_sha (in $base_target) and of the working tree…"
declare -A before after
while read -r name path; do before[$name]=$path; done \
    < <(bench_executables "$base_tree" "$base_target")
while read -r name path; do after[$name]=$path; done \
    < <(bench_executables "$PWD" "$PWD/target")
# The servers the load bench drives (the binary's package moved between commits, so
# it is asked for by name).
server_of() { (cd "$1" && CARGO_TARGET_DIR=$2 cargo build --release -q --bin kg-memory) && echo "$2/release/kg-memory"; }
declare -A server=([before]=$(server_of "$base_tree" "$base_target") [after]=$(server_of "$PWD" "$PWD/target"))
benches=(${KG_COMPARE_BENCHES:-memory write_through load})
for name in "${benches[@]}"; do
    [ -n "${before[$name]:-}" ] && [ -n "${after[$name]:-}" ] ||
        { echo "bench-compare: no '$name' bench in both trees" >&2; exit 1; }
done

# Criterion writes its reports under the working directory's target/criterion;
# keep each side's apart from the other and from the developer's own.
criterion_args=(--bench --noplot --warm-up-time 1 --measurement-time 3)
export KG_BENCH_READS=${KG_BENCH_READS:-500} KG_BENCH_PUTS=${KG_BENCH_PUTS:-150} \
    KG_BENCH_SECS=${KG_BENCH_SECS:-5} KG_BENCH_STARTS=${KG_BENCH_STARTS:-10}
for round in $(seq "$rounds"); do
    for side in before after; do
        declare -n binaries=$side
        for name in "${benches[@]}"; do
            echo "round $round/$rounds: $name, $side"
            out=$results/$side.$name.$round
            mkdir -p "$results/criterion-$side"
            if [ "$name" = load ]; then
                KG_MEMORY_BIN=${server[$side]} "${after[load]}" --bench >"$out" 2>&1
            else
                CRITERION_HOME=$results/criterion-$side "${binaries[$name]}" "${criterion_args[@]}" >"$out" 2>&1
            fi
        done
        unset -n binaries
    done
done

python3 - "$results" "$rounds" "$base_sha" "${benches[@]}" <<'EOF'
import re, statistics, sys
from pathlib import Path

results, rounds, base = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
chosen = sys.argv[4:]
UNIT = {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}

def criterion(text):
    """name → point estimate in ms, from criterion's `time: [low estimate high]` lines."""
    found, name = {}, None
    for line in text.splitlines():
        if line and not line[0].isspace() and "time:" not in line:
            name = line.strip()
        m = re.search(r"^(.*?)\s*time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]", line)
        if m:
            found[m.group(1).strip() or name] = float(m.group(2)) * UNIT[m.group(3)]
    return found

def load(text):
    """label → p50 in ms, from the load bench's `… n=… p50=… ms` lines. A label that
    comes again (the same call on the big graph of phase f) is kept apart from the
    first: `label [phase f]`, the phase read from the last `(x)` heading."""
    found, phase = {}, "a"
    for line in text.splitlines():
        heading = re.match(r"^\(([a-z])\)", line)
        if heading:
            phase = heading.group(1)
        m = re.search(r"^\s*(?:\([a-z]\)\s*)?(.*?)\s+n=\s*\d+\s+p50=([\d.]+)", line)
        if m:
            label = m.group(1)
            if label in found:
                label = f"{label} [phase {phase}]"
            found[label] = float(m.group(2))
    return found

for bench, parse in (("memory", criterion), ("write_through", criterion), ("load", load)):
    if bench not in chosen:
        continue
    sides = {}
    for side in ("before", "after"):
        runs = [parse((results / f"{side}.{bench}.{r}").read_text()) for r in range(1, rounds + 1)]
        sides[side] = {k: statistics.median(run[k] for run in runs if k in run) for k in runs[0]}
    what = "p50 of each phase" if bench == "load" else "criterion's estimate"
    print(f"\n{bench} ({what}, ms; median of {rounds} rounds)\n")
    print(f"| measurement | {base} | working tree | change |")
    print("|---|---|---|---|")
    for key, old in sides["before"].items():
        new = sides["after"].get(key)
        if new is None:
            continue
        print(f"| {key} | {old:.4g} | {new:.4g} | {100 * (new - old) / old:+.1f} % |")
EOF
