#!/usr/bin/env bash
# Installs what KG Memory needs on a Debian/Ubuntu machine, or stops with the exact
# command to run. Usage: scripts/setup.sh run|test
#   run   build and run the product (the tray app where a display is present)
#   test  everything `make test` needs: the above plus browsers, a virtual display,
#         a notification daemon and a tray host, Python and Node test clients
set -euo pipefail
purpose=${1:-test}
cd "$(dirname "$0")/.."

missing=()
# need_cmd <command> <package>: the package provides the command.
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
# need_pkg <package>: a library or tool found by dpkg.
need_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed" || missing+=("$1"); }

need_cmd cc build-essential
need_cmd pkg-config pkg-config
need_cmd git git
need_cmd curl curl
if command -v dpkg-query >/dev/null 2>&1; then
  # The tray app: WebKitGTK to build it, the appindicator library to show its icon.
  need_pkg libwebkit2gtk-4.1-dev
  need_pkg libayatana-appindicator3-1
fi
if [ "$purpose" = test ]; then
  need_cmd python3 python3
  python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
  need_cmd node nodejs
  need_cmd npm npm
  need_cmd chromium chromium           # graph view tests (playwright-core drives it)
  need_cmd xvfb-run xvfb               # the tray app's tests run on a virtual display
  need_cmd xauth xauth
  need_cmd dbus-run-session dbus
  need_cmd dunst dunst                 # a real notification daemon
  need_cmd trayer trayer               # a standalone tray host
  need_cmd import imagemagick          # screenshots
  need_cmd ss iproute2
  need_cmd rpm rpm                     # the .rpm's smoke test installs it into a temporary root
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

# The graph view (ui/): built to ui/dist and embedded into the server binary at build
# time, so it is built before cargo. Vite needs Node.js 20.19 or newer.
node_ok() {
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 &&
    node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>20||(a===20&&b>=19)?0:1)'
}
if node_ok; then
  if [ ! -f ui/dist/index.html ] || [ ui/package-lock.json -nt ui/dist/index.html ] ||
    [ -n "$(find ui/src ui/index.html ui/vite.config.ts -newer ui/dist/index.html 2>/dev/null | head -1)" ]; then
    (cd ui && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent)
  fi
elif [ "$purpose" = test ]; then
  echo "The graph view and its tests need Node.js >= 20.19 with npm (found: $(node --version 2>/dev/null || echo none))." >&2
  echo "Install it from https://nodejs.org or NodeSource, then retry." >&2
  exit 1
else
  echo "Note: Node.js >= 20.19 not found, so the graph view (ui/) is not built; the server runs without it (/ui explains how to build it)." >&2
fi

if [ "$purpose" = test ]; then
  if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
  fi
  .venv/bin/pip install -q --disable-pip-version-check -r tests/requirements.txt
  (cd tests && npm ci --no-audit --no-fund --loglevel=error)
fi
