#!/usr/bin/env bash
# Tray app benchmark: cold start to a healthy /health (median of 10), idle RSS, and CPU
# time used while idle for 60 s (wake-ups beyond the maintenance tick would show here).
# Runs the release build under Xvfb with a D-Bus session, dunst and trayer.
# Usage: scripts/bench-tray.sh   (prints a Markdown table)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p kg-memory-app
APP="$PWD/target/release/kg-memory-app"
inner=$(mktemp /dev/shm/kg-bench-tray-XXXX.sh)
cat > "$inner" <<INNER
#!/usr/bin/env bash
set -euo pipefail
dbus-update-activation-environment DISPLAY=\$DISPLAY 2>/dev/null || true
dunst >/dev/null 2>&1 & trayer --edge top --align right --widthtype request --height 32 >/dev/null 2>&1 &
sleep 1
root=\$(mktemp -d /dev/shm/kg-bench-tray-XXXX)
export HOME=\$root/home KG_STORAGE_ROOT=\$root/storage KG_AUTOCOMMIT_INTERVAL=0 KG_SAVE_INTERVAL=30
mkdir -p \$HOME
starts=()
for i in \$(seq 10); do
  port=\$((20000 + RANDOM % 20000))
  t0=\$(date +%s%N)
  KG_HTTP_PORT=\$port "$APP" >/dev/null 2>&1 &
  pid=\$!
  until curl -sf "http://127.0.0.1:\$port/health" >/dev/null; do sleep 0.005; done
  t1=\$(date +%s%N)
  starts+=(\$(( (t1 - t0) / 1000000 )))
  if [ \$i -lt 10 ]; then kill -TERM \$pid; wait \$pid || true; fi
done
sleep 5
rss=\$(awk '/VmRSS/ {print \$2}' /proc/\$pid/status)
ticks0=\$(awk '{print \$14 + \$15}' /proc/\$pid/stat)
sleep 60
ticks1=\$(awk '{print \$14 + \$15}' /proc/\$pid/stat)
hz=\$(getconf CLK_TCK)
kill -TERM \$pid; wait \$pid || true
sorted=\$(printf '%s\n' "\${starts[@]}" | sort -n | tr '\n' ' ')
median=\$(printf '%s\n' "\${starts[@]}" | sort -n | sed -n 5,6p | awk '{s+=\$1} END {print s/2}')
echo "| metric | value |"
echo "|---|---|"
echo "| cold start to healthy /health (median of 10) | \${median} ms (all: \${sorted}) |"
echo "| idle RSS after start | \$((rss / 1024)) MiB |"
echo "| CPU used while idle for 60 s (KG_SAVE_INTERVAL=30) | \$(( (ticks1 - ticks0) * 1000 / hz )) ms |"
rm -rf "\$root"
INNER
chmod +x "$inner"
xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- "$inner" 2> >(grep -v -e dbus-daemon -e SpiRegistry >&2)
rm -f "$inner"
