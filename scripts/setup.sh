#!/usr/bin/env bash
# Installs what KG Memory needs on a Debian/Ubuntu machine, or stops with the exact
# command to run. Usage: scripts/setup.sh run|test
set -euo pipefail
purpose=${1:-test}
cd "$(dirname "$0")/.."

missing=()
# need_cmd <command> <debian package>: the package provides the command.
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
# need_pkg <debian package>: a library or tool found by dpkg.
need_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed" || missing+=("$1"); }

need_cmd cc build-essential
need_cmd pkg-config pkg-config
need_cmd git git
if [ "$purpose" = test ]; then
  need_cmd python3 python3
  python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
  need_cmd node nodejs
  need_cmd npm npm
fi

if [ ${#missing[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "KG Memory needs: ${missing[*]} (Debian/Ubuntu package names). Install them with your package manager and retry." >&2
    exit 1
  fi
  install=(apt-get install -y --no-install-recommends "${missing[@]}")
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${install[@]}"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive "${install[@]}"
  else
    echo "Missing system packages. Run this, then retry:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "Rust is missing. Install it with:" >&2
  echo "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y && . \"\$HOME/.cargo/env\"" >&2
  exit 1
fi

if [ "$purpose" = test ]; then
  if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
  fi
  .venv/bin/pip install -q --disable-pip-version-check -r tests/requirements.txt
  (cd tests && npm ci --no-audit --no-fund --loglevel=error)
fi
