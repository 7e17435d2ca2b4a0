#!/usr/bin/env bash
# Fuzz the parsers and decision code for a bounded time per target.
# Usage: scripts/fuzz.sh [seconds-per-target (default 60)] [target ...]
# Targets: graph_load render_graph text_gate tool_args hook_payloads.
# Needs cargo-fuzz (installed here if missing). cargo fuzz uses nightly-only compiler
# flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain accept them.
# The committed corpora are minimised after long runs and capped at 15 KiB an input to
# keep the repository small:
#   cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz cmin -O <target> corpus/<target>
#   find corpus -type f -size +15k -delete
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(graph_load render_graph text_gate tool_args hook_payloads)
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
cd fuzz
for t in "${targets[@]}"; do
  echo "==> fuzzing $t for ${secs}s"
  RUSTC_BOOTSTRAP=1 cargo fuzz run -O "$t" "corpus/$t" -- \
    -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 -print_final_stats=1
done
