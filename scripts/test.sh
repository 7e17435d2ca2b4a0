#!/usr/bin/env bash
# Runs every test of KG Memory. Expects scripts/setup.sh test to have run.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==> %s\n' "$*"; }
export KG_MEMORY_BIN="$PWD/target/debug/kg-memory"
# One build of each crate, run once: incremental compilation's caches would only take
# disk and time (a cold run leaves 3.3 GB in target/; with them, and with two duplicate
# builds since removed, it left 4.8 GB).
# Set CARGO_INCREMENTAL=1 to keep them while editing.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

step "format and lints"
cargo fmt --all -- --check
# kg-core declares its modules through a macro (src/lib.rs), which cargo fmt does not
# follow: check those files by name.
git ls-files -z 'crates/kg-core/src/*.rs' | xargs -0 rustfmt --edition 2024 --check
cargo clippy --workspace --all-targets -- -D warnings
# kg-core as the front ends see it (no `internals` feature): only lib.rs's
# re-exports are public, each documented, nothing dead (CONTRIBUTING.md).
cargo clippy -p kg-core -p kg-server -p kg-cli -p kg-memory-app --lib --bins -- -D warnings
# The graph view's modules: no import circle, none over 800 lines of code (and the
# check's own tests).
node ui/scripts/structure.mjs
node --test ui/scripts/

step "build (server, tray app)"
# --tests builds with the dev-dependencies' features, so the test step
# reuses these artifacts instead of compiling a second copy of rmcp and tauri.
cargo build --workspace --bins --tests

step "Rust tests: unit, golden parity, invariants, crash safety, the server over HTTP"
# #[ignore] marks only tests that need root, with the reason "needs root: …"
# (CONTRIBUTING.md): any other would silently never run here.
if grep -rn --include='*.rs' '#\[ignore' crates src-tauri | grep -v '#\[ignore = "needs root: '; then
  echo 'test.sh: #[ignore] is only for tests that need root, as #[ignore = "needs root: why"]' >&2
  exit 1
fi
cargo test --workspace
if [ "$(id -u)" = 0 ]; then
  step "Rust tests that need root (#[ignore = \"needs root: …\"])"
  cargo test --workspace --tests -- --ignored
else
  echo
  echo "Not root: skipped these tests that need root (CI runs them as root):"
  cargo test --workspace --tests -q -- --list --ignored 2>/dev/null | sed -n 's/^\(.*\): test$/  \1/p'
fi

step "end-to-end: Python MCP SDK, stdio bridge, the real Claude Code CLI and plugin"
.venv/bin/python -m pytest -q tests/e2e

step "end-to-end: the graph view in Chromium (playwright-core)"
node --test --test-concurrency=1 tests/browser/

step "end-to-end: the tray app under Xvfb with dunst and trayer"
xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- .venv/bin/python -m pytest -q tests/tray \
  2> >(grep -v -e '^dbus-daemon' -e 'SpiRegistry' >&2)

step "end-to-end: the .deb and the .rpm built from this tree, unpacked or installed into a folder, and run (their app under Xvfb)"
# A debug build of the package (scripts/package.sh --debug): the same bundler, layout
# and configuration as `make package`, reusing this run's debug build instead of a
# release build that would not fit CI's time.
./scripts/package.sh --debug
xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- .venv/bin/python -m pytest -q tests/package \
  2> >(grep -v -e '^dbus-daemon' -e 'SpiRegistry' >&2)
