"""The tray app's memory with and without its graph window (issue 38).

Run by scripts/bench-tray-window.sh inside Xvfb with a D-Bus session, dunst and
trayer. On a 2,000-node user graph (tests/browser/seed.mjs, the benchmark's
"stress" graph: 1,200 active, 500 archived, 300 orphaned), it measures the app's
process tree (the app, the graph window's own process and WebKit's web and network
processes): idle after start with no window, with the graph window open for N minutes
(sampled every 30 s), and after the window is closed the way a window manager closes
it (WM_DELETE_WINDOW); then the window is opened again and closed again. RSS counts shared pages once per
process; PSS shares them out, so the PSS sum is what the tree really costs (but a
process's PSS also falls as other programs map the same libraries, and rises as they
exit). Each process is listed with its PSS and its RSS.

Usage (inside the display): python3 scripts/bench-tray-window.py APP MINUTES
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "tray"))
from x11 import close_window  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree(pid: int) -> list[int]:
    """`pid` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def memory(pid: int) -> dict:
    """RSS and PSS of the tree in MiB, and its processes by name."""
    rss = pss = 0
    names = []
    for p in tree(pid):
        try:
            rollup = Path(f"/proc/{p}/smaps_rollup").read_text()
            name = Path(f"/proc/{p}/comm").read_text().strip()
        except OSError:
            continue
        fields = {l.split(":")[0]: int(l.split()[1]) for l in rollup.splitlines()[1:] if l.split()[1].isdigit()}
        rss += fields.get("Rss", 0)
        pss += fields.get("Pss", 0)
        names.append(f"{name} {fields.get('Pss', 0) / 1024:.0f} (RSS {fields.get('Rss', 0) / 1024:.0f})")
    return {"rss": rss / 1024, "pss": pss / 1024, "processes": names}


# ----- the run -------------------------------------------------------------------------

# The graph the window shows: the stress graph, or a small one (KG_BENCH_WINDOW_GRAPH=
# small) for the floor: what the window's processes cost before the graph's size.
GRAPH_SIZES = {
    "stress": {"active": 1200, "archived": 500, "orphaned": 300, "unconnected": 40},
    "small": {"active": 12, "archived": 4, "orphaned": 2, "unconnected": 1},
}


def seed(storage: Path, graph: str) -> None:
    script = f"""
import {{ makeGraph, writeStorage }} from {json.dumps(str(REPO / 'tests/browser/seed.mjs'))};
const now = Date.now() / 1000;
const g = makeGraph({{ prefix: 'b', now, seed: 3, ...{json.dumps(GRAPH_SIZES[graph])} }});
for (const n of Object.values(g.file.nodes)) n._created_ts = now - 3600;
writeStorage({json.dumps(str(storage))}, g.file, {{}});
"""
    subprocess.run(["node", "--input-type=module", "-e", script], check=True)


def wait_report(report: Path, lines: int, limit: float = 60.0) -> float | None:
    """Seconds until the page report holds `lines` lines (a page drew); None when
    none drew within `limit` (an app that only hid its window shows the old page)."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        text = report.read_text() if report.exists() else ""
        # Complete lines only: the app may be writing the last one.
        answers = text.splitlines() if text.endswith("\n") else text.splitlines()[:-1]
        if len(answers) >= lines:
            took = time.monotonic() - start
            page = json.loads(answers[-1])
            # A window that is not showing the graph view (an app built before
            # `ui/dist`, say) costs far less and would measure nothing of the view.
            if not page.get("nodes"):
                shown = page.get("error") or " ".join(str(page.get("text", "")).split())[:200]
                raise SystemExit(f"the window did not draw the graph view; it showed: {shown}")
            return took
        time.sleep(0.02)
    return None


def main() -> None:
    app, minutes = sys.argv[1], float(sys.argv[2])
    root = Path(tempfile.mkdtemp(prefix="kg-bench-window-", dir="/dev/shm"))
    home, storage = root / "home", root / "storage"
    home.mkdir()
    graph = os.environ.get("KG_BENCH_WINDOW_GRAPH", "stress")
    if graph not in GRAPH_SIZES:
        raise SystemExit(f"KG_BENCH_WINDOW_GRAPH is one of {', '.join(GRAPH_SIZES)}, not {graph!r}")
    print(f"graph: {graph} {GRAPH_SIZES[graph]}")
    seed(storage, graph)
    state = home / ".local/state/kg-memory"
    state.mkdir(parents=True)
    (state / "window.json").write_text(json.dumps({"x": 40, "y": 60, "width": 1200, "height": 720}))
    report = root / "page-report.jsonl"
    port = free_port()
    env = dict(os.environ, HOME=str(home), KG_STORAGE_ROOT=str(storage), KG_HTTP_PORT=str(port),
               KG_AUTOCOMMIT_INTERVAL="0", KG_TEST_PAGE_REPORT=str(report))
    proc = subprocess.Popen([app], env=env, stdout=subprocess.DEVNULL, stderr=open(root / "app.log", "w"))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the app never answered /health")
                time.sleep(0.05)
        time.sleep(20)
        rows = [("idle, no window (20 s after start)", memory(proc.pid))]

        def open_window(n: int, limit: float = 60.0) -> float | None:
            subprocess.run([app], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
            return wait_report(report, n, limit)

        first_open = open_window(1)
        if first_open is None:
            raise SystemExit("the graph window did not draw within 60 s")
        samples = []
        end = time.monotonic() + minutes * 60
        while time.monotonic() < end:
            time.sleep(min(30, max(0.0, end - time.monotonic())))
            samples.append(memory(proc.pid))
        rows.append((f"window open, {minutes:g} min: median of {len(samples)} samples", {
            "rss": statistics.median(s["rss"] for s in samples),
            "pss": statistics.median(s["pss"] for s in samples),
            "processes": samples[-1]["processes"],
        }))
        rows.append((f"window open, {minutes:g} min: largest sample", {
            "rss": max(s["rss"] for s in samples), "pss": max(s["pss"] for s in samples), "processes": samples[-1]["processes"],
        }))
        closed = close_window()
        time.sleep(10)
        rows.append((f"10 s after closing ({closed} window(s) asked to close)", memory(proc.pid)))
        time.sleep(20)
        rows.append(("30 s after closing", memory(proc.pid)))
        reopen = open_window(2, limit=15)
        time.sleep(5)
        rows.append(("opened again", memory(proc.pid)))
        close_window()
        time.sleep(30)
        rows.append(("30 s after closing it again", memory(proc.pid)))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    idle = rows[0][1]["pss"]
    print(f"| state | RSS, summed (MiB) | PSS, summed (MiB) | × idle (PSS) | processes |")
    print("|---|---|---|---|---|")
    for what, m in rows:
        print(f"| {what} | {m['rss']:.0f} | {m['pss']:.0f} | {m['pss'] / idle:.2f} | {', '.join(m['processes'])} |")
    again = "the hidden window shown again, no new page" if reopen is None else f"{reopen:.2f} s"
    print(f"\nopen → graph drawn: first {first_open:.2f} s, again after closing: {again}")
    print(f"loadavg at the end: {Path('/proc/loadavg').read_text().split()[:3]}")


if __name__ == "__main__":
    main()
