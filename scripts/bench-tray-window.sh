#!/usr/bin/env bash
# The tray app's memory with and without its graph window (issue 38): idle, the window
# open on a 2,000-node graph for MINUTES (default 10), after closing it, and after
# opening and closing it again; and how long the window takes to draw the graph.
# Runs the release build (or KG_MEMORY_APP_BIN) under Xvfb with a D-Bus session,
# dunst and trayer; the work is scripts/bench-tray-window.py.
# Usage: scripts/bench-tray-window.sh [MINUTES]   (prints a Markdown table)
# KG_BENCH_WINDOW_GRAPH=small shows a 19-node graph instead: the floor, what the
# window costs before the graph's size.
set -euo pipefail
cd "$(dirname "$0")/.."
APP=${KG_MEMORY_APP_BIN:-$PWD/target/release/kg-memory-app}
if [ -z "${KG_MEMORY_APP_BIN:-}" ]; then
  # The app embeds the graph view only if it was built first.
  [ -f ui/dist/index.html ] || (cd ui && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent)
  cargo build --release -q -p kg-memory-app
fi
minutes=${1:-10}
inner=$(mktemp /dev/shm/kg-bench-window-XXXX.sh)
cat > "$inner" <<INNER
#!/usr/bin/env bash
set -euo pipefail
dbus-update-activation-environment DISPLAY=\$DISPLAY 2>/dev/null || true
dunst >/dev/null 2>&1 & trayer --edge top --align right --widthtype request --height 32 >/dev/null 2>&1 &
sleep 1
python3 "$PWD/scripts/bench-tray-window.py" "$APP" "$minutes"
INNER
chmod +x "$inner"
xvfb-run -a -s "-screen 0 1600x1000x24" dbus-run-session -- "$inner" 2> >(grep -v -e dbus-daemon -e SpiRegistry >&2)
rm -f "$inner"
