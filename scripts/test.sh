#!/usr/bin/env bash
# Runs every test of KG Memory. Expects scripts/setup.sh test to have run.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==> %s\n' "$*"; }

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings

step "build"
cargo build --workspace

step "Rust tests (unit, golden parity, crash safety, server over HTTP)"
cargo test --workspace

step "end-to-end: Python MCP SDK and the real Claude Code CLI"
KG_MEMORY_BIN="$PWD/target/debug/kg-memory" .venv/bin/python -m pytest -q tests/e2e
