"""The real tray app (`kg-memory-app`) under Xvfb, in a D-Bus session with a real
notification daemon (dunst) and a standalone tray host (trayer).

Run by scripts/test.sh as
  xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- .venv/bin/python -m pytest tests/tray
Screenshots land in artifacts/ (look at them).
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
from conftest import free_port, make_temp_root, write_clock  # noqa: E402

sys.path.insert(0, str(REPO / "tests" / "tray"))
from sni import Watcher  # noqa: E402
from x11 import close_window  # noqa: E402

APP = Path(os.environ.get("KG_MEMORY_APP_BIN") or REPO / "target" / "debug" / "kg-memory-app")
ARTIFACTS = REPO / "artifacts"
DAY = 86_400.0
NOW = 1_795_176_000.0  # 2026-11-20 12:00 UTC, driven through KG_CLOCK_FILE


def require_desktop() -> None:
    missing = [v for v in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS") if not os.environ.get(v)]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} unset: run these tests inside "
            '`xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- …` (scripts/test.sh does)',
            pytrace=False,
        )
    for tool in ("dunst", "trayer", "dbus-monitor", "import"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is missing: run scripts/setup.sh test", pytrace=False)
    if not APP.is_file():
        pytest.fail(f"{APP} is missing: build it with `cargo build -p kg-memory-app`", pytrace=False)


@pytest.fixture(scope="module")
def desktop():
    """A notification daemon and a tray host on the test display."""
    require_desktop()
    subprocess.run(["dbus-update-activation-environment", f"DISPLAY={os.environ['DISPLAY']}"], check=False)
    procs = [
        subprocess.Popen(["dunst"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        subprocess.Popen(
            ["trayer", "--edge", "top", "--align", "right", "--widthtype", "request", "--height", "32", "--SetDockType", "true"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
    ]
    time.sleep(1.0)
    yield
    for p in procs:
        p.terminate()
        p.wait(timeout=10)


class Notifications:
    """Notify calls seen on the session bus (dbus-monitor)."""

    def __init__(self, path: Path):
        self.path = path
        self.proc = subprocess.Popen(
            ["dbus-monitor", "--session", "interface='org.freedesktop.Notifications',member='Notify'"],
            stdout=open(path, "w"),
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.5)

    def summaries(self) -> list[str]:
        """The summary (second string argument after the app name and icon) of each Notify."""
        calls, current = [], None
        for line in self.path.read_text(errors="replace").splitlines():
            if "member=Notify" in line:
                current = []
                calls.append(current)
            elif current is not None and line.strip().startswith("string "):
                current.append(line.strip()[len("string ") :].strip('"'))
        # Notify(app_name, replaces_id, app_icon, summary, body, actions…): strings 0, 1, 2 = name, icon, summary
        return [c[2] for c in calls if len(c) >= 3]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=5)


class App:
    def __init__(self, root: Path, port: int, clock: float | None = NOW):
        self.root, self.port = root, port
        self.home = root / "home"
        self.storage = root / "storage"
        self.home.mkdir(parents=True, exist_ok=True)
        self.storage.mkdir(parents=True, exist_ok=True)
        self.clock = root / "clock"
        if clock is not None:
            write_clock(self.clock, clock)
        # Where the graph window opens (the app remembers it here): inside the 1280x800
        # screen, clear of the tray host.
        state = self.home / ".local" / "state" / "kg-memory"
        state.mkdir(parents=True, exist_ok=True)
        (state / "window.json").write_text(json.dumps({"x": 40, "y": 60, "width": 900, "height": 600}))
        self.log = root / f"app-{time.monotonic_ns()}.log"
        self.proc: subprocess.Popen | None = None
        # What the graph window's page shows, one JSON line per page load (the app's
        # test-only KG_TEST_PAGE_REPORT, src-tauri/src/window.rs).
        self.page_report = root / "page-report.jsonl"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_DATA_HOME=str(self.home / ".local/share"),
            KG_STORAGE_ROOT=str(self.storage),
            KG_HTTP_PORT=str(self.port),
            KG_AUTOCOMMIT_INTERVAL="0",
            KG_SAVE_INTERVAL="2",
            KG_CLOCK_FILE=str(self.clock),
            KG_TEST_PAGE_REPORT=str(self.page_report),
        )
        return env

    def launch(self) -> subprocess.Popen:
        return subprocess.Popen([str(APP)], env=self.env(), stdout=open(self.log, "ab"), stderr=subprocess.STDOUT)

    def start(self, healthy: bool = True) -> "App":
        self.proc = self.launch()
        if healthy:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                assert self.proc.poll() is None, f"the app exited early:\n{self.log.read_text()}"
                try:
                    if self.health()["status"] == "ok":
                        break
                except OSError:
                    time.sleep(0.05)
            else:
                pytest.fail(f"the app's server never answered /health:\n{self.log.read_text()}")
        return self

    def health(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
            return json.loads(r.read())

    def mcp(self, tool: str, args: dict) -> str:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/",
            data=body,
            headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            reply = json.loads(r.read())
        return reply["result"]["content"][0]["text"]

    def wait_log(self, text: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log.read_text(errors="replace"):
                return
            time.sleep(0.1)
        pytest.fail(f"{text!r} never appeared in the app's log:\n{self.log.read_text()}")

    def open_window(self, timeout: float = 40) -> dict:
        """Open the graph window the way a second launch does and wait for its page's
        report (a fresh window: the first opening in this app's life)."""
        reports = self.page_reports()
        second = self.launch()
        assert second.wait(timeout=30) == 0, self.log.read_text()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None and self.proc.poll() is None, f"the app exited:\n{self.log.read_text()}"
            now = self.page_reports()
            if len(now) > len(reports):
                return now[-1]
            time.sleep(0.1)
        pytest.fail(f"the graph window's page never reported what it shows:\n{self.log.read_text()}")

    def page_reports(self) -> list[dict]:
        if not self.page_report.exists():
            return []
        # The app may be writing a line: only whole lines count.
        lines = self.page_report.read_text().split("\n")[:-1]
        return [json.loads(line) for line in lines if line.strip()]

    def stop(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                pytest.fail(f"the app did not quit on SIGTERM:\n{self.log.read_text()}")
        return self.proc.returncode


def screenshot(name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    subprocess.run(["import", "-window", "root", str(path)], check=True)
    return path


def colours_in(shot: Path, geometry: str) -> int:
    """How many distinct colours a region of a screenshot holds (a drawn page has many)."""
    out = subprocess.run(
        ["convert", str(shot), "-crop", geometry, "+repage", "-format", "%k", "info:"], capture_output=True, text=True, check=True
    ).stdout
    return int(out.strip())


def tray_colour(shot: Path) -> tuple[int, int, int]:
    """The average colour of the tray host's area (top right, where trayer docks)."""
    out = subprocess.run(
        ["convert", str(shot), "-crop", "34x32+1246+0", "+repage", "-resize", "1x1!", "-format", "%[fx:int(255*r)],%[fx:int(255*g)],%[fx:int(255*b)]", "info:"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    r, g, b = (int(x) for x in out.split(","))
    return r, g, b


@pytest.fixture
def root():
    path = make_temp_root("kg-tray-")
    yield path
    if not os.environ.get("KG_E2E_KEEP"):
        shutil.rmtree(path, ignore_errors=True)


def seed_busy_graph(storage: Path, home: Path) -> Path:
    """A user graph that is busy (reads on four recent days) and long unmaintained, but
    tidy: small connected gists, so its debt is LOW until oversized gists arrive."""
    nodes, edges = {}, {}
    for i in range(8):
        nid = f"habit-{i}"
        nodes[nid] = {"id": nid, "gist": f"Habit {i}: small and connected", "_created_ts": NOW - 60 * DAY, "_last_read_ts": NOW - (i % 4) * DAY}
        edges[f"{nid}->hub:part-of"] = {"from": nid, "to": "hub", "rel": "part-of"}
    nodes["hub"] = {"id": "hub", "gist": "Hub of habits", "_created_ts": NOW - 60 * DAY}
    graph = {"nodes": nodes, "edges": edges, "_meta": {"versions": {}, "progress": {"maintain": {"last_ts": NOW - 40 * DAY}}, "namespace": {"kind": "user", "owner": None}}}
    (storage / "user.json").write_text(json.dumps(graph, indent=2))
    project = home / "app"
    project.mkdir(parents=True, exist_ok=True)
    return project


def test_app_serves_opens_its_window_and_refuses_a_second_server(desktop, root):
    app = App(root, free_port()).start()
    assert app.health()["transport"] == "streamable-http"
    app.wait_log("tray state: healthy")
    time.sleep(1.0)
    r, g, b = tray_colour(screenshot("tray-healthy.png"))
    assert g > r and g > b, f"the healthy badge is green, the tray shows rgb({r},{g},{b})"
    # A second launch hands over to the first (which opens the graph window) and exits
    # without starting a server of its own.
    second = app.launch()
    assert second.wait(timeout=30) == 0, app.log.read_text()
    app.wait_log("a second launch asked to open the graph view")
    listeners = subprocess.run(["ss", "-ltnH", f"sport = :{app.port}"], capture_output=True, text=True).stdout
    assert len([l for l in listeners.splitlines() if l.strip()]) == 1, listeners
    # The window shows the graph view served by the app's own server, where it was left.
    deadline = time.monotonic() + 30
    while True:
        shot = screenshot("tray-window.png")
        if colours_in(shot, "900x600+40+60") > 20:
            break
        assert time.monotonic() < deadline, "the graph window never drew the page (see artifacts/tray-window.png)"
        time.sleep(1)
    assert app.health()["status"] == "ok"
    assert app.stop() == 0


def seed_topics(storage: Path) -> dict[str, int]:
    """A user graph of four topics (ids `auth-…`, `db-…`, `ui-…`, `ops-…`), so the view
    colours its nodes with four topic colours. Returns how many nodes each topic has."""
    sizes = {"auth": 4, "db": 3, "ui": 2, "ops": 1}
    nodes, edges = {}, {}
    for topic, n in sizes.items():
        for i in range(n):
            nid = f"{topic}-{i}"
            nodes[nid] = {"id": nid, "gist": f"{topic} note {i}", "_created_ts": NOW - 3 * DAY, "_last_read_ts": NOW - DAY}
            if i:
                edges[f"{nid}->{topic}-0:part-of"] = {"from": nid, "to": f"{topic}-0", "rel": "part-of"}
    graph = {"nodes": nodes, "edges": edges, "_meta": {"versions": {}, "namespace": {"kind": "user", "owner": None}}}
    (storage / "user.json").write_text(json.dumps(graph, indent=2))
    return sizes


GREY = "rgb(136,136,136)"  # stylesheet.ts's stand-in when a theme colour cannot be read


def rgb(hex_colour: str) -> str:
    h = hex_colour.strip().lstrip("#")
    return f"rgb({int(h[0:2], 16)},{int(h[2:4], 16)},{int(h[4:6], 16)})"


def colour_problems(report: dict, sizes: dict[str, int]) -> list[str]:
    """What is wrong with the node colours a page reported (nothing when every node has
    its topic's colour)."""
    if "nodes" not in report:
        return [f"the page is not the graph view: {report}"]
    nodes = report["nodes"]
    if len(nodes) != sum(sizes.values()):
        return [f"{len(nodes)} nodes drawn, {sum(sizes.values())} expected"]
    problems = []
    by_topic: dict[str, set[str]] = {}
    for n in nodes:
        colour = n["background"].replace(" ", "")
        by_topic.setdefault(n["id"].split(":")[-1].split("-")[0], set()).add(colour)
        if colour == GREY:
            problems.append(f"{n['id']} is grey")
    if len(set().union(*by_topic.values())) != len(sizes) or any(len(c) != 1 for c in by_topic.values()):
        problems.append(f"not one colour per topic: {by_topic}")
    # Each node is drawn in the colour the theme names now for its topic's class.
    palette = report.get("palette") or {}
    for n in nodes:
        slot = next((c for c in n["classes"].split() if c in palette), None)
        if slot is None or slot == "tx":
            problems.append(f"{n['id']} has no topic colour of its own: {n['classes']}")
        elif n["background"].replace(" ", "") != rgb(palette[slot]):
            problems.append(f"{n['id']} is not drawn in --{slot} ({palette[slot]}): {n['background']}")
    return problems


def test_the_graph_window_draws_topic_colours_every_time_it_opens(desktop, root):
    """The page colours the graph from its stylesheet's theme variables, and WebKitGTK
    may run the page's script before that stylesheet has loaded: before the fix, about
    one opening in five to three drew every node grey. Each opening is a fresh app (a
    fresh page) on the same home, as a person starts it day after day; the colours
    Cytoscape applied to the nodes are read from the page. KG_TRAY_OPENINGS=N opens it
    N times instead of 10."""
    openings = int(os.environ.get("KG_TRAY_OPENINGS", "10"))
    storage = root / "storage"
    storage.mkdir(parents=True, exist_ok=True)
    sizes = seed_topics(storage)
    failures = []
    for i in range(openings):
        app = App(root, free_port()).start()
        try:
            report = app.open_window()
            problems = colour_problems(report, sizes)
            shot = screenshot(f"tray-colours-{i:02}.png")
            if problems:
                failures.append(f"opening {i + 1} ({shot.name}): {'; '.join(problems)}")
        finally:
            assert app.stop() == 0, app.log.read_text()
    assert not failures, f"{len(failures)} of {openings} openings drew the graph wrong:\n" + "\n".join(failures)


def descendants(pid: int) -> list[tuple[int, str]]:
    """The app's descendants (the graph window's process, WebKit's processes), with their names."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    found = []
    for child in parents:
        p = child
        while p in parents and p != pid:
            p = parents[p]
        if p == pid and child != pid:
            try:
                found.append((child, Path(f"/proc/{child}/comm").read_text().strip()))
            except OSError:
                pass
    return found


def web_processes(pid: int) -> list[int]:
    """WebKit's web processes among the app's descendants (the page of its window)."""
    return [p for p, name in descendants(pid) if name.startswith("WebKitWebProces")]


def test_closing_the_graph_window_ends_its_web_process_and_it_opens_again(desktop, root):
    """Closing the window (as a window manager asks, WM_DELETE_WINDOW) ends the window's
    own process and every WebKit process with it (the web process, most of the memory
    the open window takes, and the network process, which WebKit keeps while the process
    that started it lives); the app stays in the tray, and opening the view again draws
    a fresh page."""
    storage = root / "storage"
    storage.mkdir(parents=True, exist_ok=True)
    sizes = seed_topics(storage)
    app = App(root, free_port()).start()
    try:
        assert colour_problems(app.open_window(), sizes) == []
        assert web_processes(app.proc.pid), "no web process while the window is open"
        assert close_window() == 1, "the graph window is not on the display"
        deadline = time.monotonic() + 20
        while descendants(app.proc.pid):
            assert time.monotonic() < deadline, f"processes outlived the window: {descendants(app.proc.pid)}"
            time.sleep(0.2)
        app.wait_log("graph window closed")
        assert app.proc.poll() is None, "closing the window ended the app"
        assert app.health()["status"] == "ok"
        assert colour_problems(app.open_window(), sizes) == []
        screenshot("tray-window-reopened.png")
    finally:
        assert app.stop() == 0, app.log.read_text()


def test_debt_high_notifies_once_and_changes_the_badge(desktop, root):
    app = App(root, free_port())
    project = seed_busy_graph(app.storage, app.home)
    watch = Notifications(root / "notify.log")
    try:
        app.start()
        app.wait_log("tray state: healthy")
        before = tray_colour(screenshot("tray-badge-before.png"))
        text = app.mcp("kg_read", {"cwd": str(project)})
        sid = text.rsplit("Session: ", 1)[1][:8]
        for i in range(8):
            app.mcp("kg_put_node", {"session_id": sid, "level": "user", "id": f"sprawl-{i}", "gist": "x" * 400})
        app.wait_log("tray state: DEBT HIGH")
        time.sleep(1.5)
        after = tray_colour(screenshot("tray-badge-high.png"))
        # More writes while HIGH do not notify again.
        app.mcp("kg_put_node", {"session_id": sid, "level": "user", "id": "sprawl-extra", "gist": "y" * 400})
        time.sleep(2)
        tending = [s for s in watch.summaries() if "needs tending" in s]
        assert tending == ["KG Memory: user needs tending"], f"{watch.summaries()}\n{app.log.read_text()}"
        assert after[0] > after[1] + 60, f"the HIGH badge is red: before rgb{before}, after rgb{after}"
        assert before != after
    finally:
        watch.stop()
        app.stop()


def wait_until(read, ok, what: str, timeout: float = 20):
    """Poll `read()` until `ok` holds for its value; returns that value."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = read()
        if ok(value):
            return value
        time.sleep(0.2)
    pytest.fail(f"{what}: last seen {value!r}")


GRAPH_LINE = re.compile(r"^  (\S+) — DEBT (LOW|MED|HIGH) \(([0-9.]+)(: .*)?\) · HEALTH (\d+) nodes?, (\d+)% unlinked$")


def graph_lines(menu: list[str]) -> dict[str, tuple[str, int, int]]:
    """The menu's per-graph lines: name → (DEBT level, nodes, % unlinked)."""
    found = {}
    for line in menu:
        m = GRAPH_LINE.match(line)
        if m:
            found[m.group(1)] = (m.group(2), int(m.group(5)), int(m.group(6)))
    return found


def test_the_indicator_label_and_menu_show_debt_and_health_as_debt_rises(desktop, root):
    """Linux's indicators show no tooltip: the label beside the icon carries the worst DEBT
    and HEALTH, and the menu one line per graph, read here as a panel reads them."""
    watcher = Watcher()
    app = App(root, free_port())
    project = seed_busy_graph(app.storage, app.home)
    watch = Notifications(root / "notify.log")
    try:
        app.start()
        app.wait_log("tray state: healthy")
        label = wait_until(watcher.label, lambda v: v == "DEBT LOW · 0% unlinked", "the calm label")
        menu = watcher.menu()
        assert graph_lines(menu) == {"user": ("LOW", 9, 0)}, menu
        assert menu.index("Graphs (neediest first):") < menu.index("Quit"), menu

        # An agent starts on a project: its graph gets a line of its own, live.
        text = app.mcp("kg_read", {"cwd": str(project)})
        sid = text.rsplit("Session: ", 1)[1][:8]
        app.mcp("kg_put_node", {"session_id": sid, "level": "project", "id": "build-cache", "gist": "The build cache lives in target/"})
        lines = wait_until(lambda: graph_lines(watcher.menu()), lambda v: len(v) == 2, "a line per graph")
        project_graph = next(name for name in lines if name != "user")
        assert lines[project_graph][1:] == (1, 100), lines

        # DEBT rises on the user graph: oversized, unlinked gists.
        for i in range(8):
            app.mcp("kg_put_node", {"session_id": sid, "level": "user", "id": f"sprawl-{i}", "gist": "x" * 400})
        app.wait_log("tray state: DEBT HIGH")
        label = wait_until(watcher.label, lambda v: v.startswith("DEBT HIGH"), "the label after DEBT rose")
        assert label == "DEBT HIGH · 100% unlinked", f"the worst HEALTH (the project's one unlinked node): {label}"
        menu = watcher.menu()
        lines = graph_lines(menu)
        assert lines.get("user") == ("HIGH", 17, 47), menu
        # Neediest first: the user graph's line comes before the project's.
        assert [name for name in (l.split(" — ")[0].strip() for l in menu) if name in lines] == ["user", project_graph], menu
        assert any(l.startswith("  user — DEBT HIGH (") and ": " in l.split("(", 1)[1] for l in menu), f"a graph to tend says why: {menu}"
        time.sleep(1.5)
        assert [s for s in watch.summaries() if "needs tending" in s] == ["KG Memory: user needs tending"], watch.summaries()
    finally:
        watch.stop()
        app.stop()
        watcher.stop()


def seed_settled_project(storage: Path, home: Path) -> Path:
    """A project settled between its fill line and its budget, its archived anchors near
    their share: 14 active nodes and 380 curated archived ones (two days old, each linked
    to one active node). A burst of unlinked notes takes the budget and orphans curated
    nodes (the graph view's small.test.mjs uses the same shape)."""
    folder = home / "src" / "gamma"
    folder.mkdir(parents=True, exist_ok=True)
    nodes, edges = {}, {}
    for i in range(14):
        nid = f"gamma-{i:04d}"
        nodes[nid] = {"id": nid, "gist": f"Gamma insight {i} ".ljust(100, "x"), "_created_ts": NOW - 60 * DAY, "_last_read_ts": NOW - 2 * DAY + i * 60}
    for i in range(380):
        nid = f"gamma-r{i:03d}"
        nodes[nid] = {"id": nid, "gist": f"Curated {i}".ljust(80, "y"), "_created_ts": NOW - 2 * DAY, "_archived": True}
        to = f"gamma-{i % 14:04d}"
        edges[f"{nid}->{to}:relates"] = {"from": nid, "to": to, "rel": "relates"}
    graph = {"nodes": nodes, "edges": edges, "_meta": {"versions": {}, "project_path": str(folder), "namespace": {"kind": "project", "owner": None}}}
    (storage / "projects" / "gamma").mkdir(parents=True, exist_ok=True)
    (storage / "projects" / "gamma" / "graph.json").write_text(json.dumps(graph))
    return folder


@pytest.mark.parametrize("host", ["hosted", "attached"])
def test_a_burst_that_orphans_curated_nodes_is_told_once_by_a_notification(desktop, root, host):
    """The app's own server, or one it attached to (it follows that server's /ws)."""
    app = App(root, free_port())
    folder = seed_settled_project(app.storage, app.home)
    watch = Notifications(root / "notify.log")
    server = None
    if host == "attached":
        env = app.env()
        server = subprocess.Popen([str(APP.parent / "kg-memory"), "serve", "--port", str(app.port)], env=env, stdout=open(root / "serve.log", "ab"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                if app.health()["status"] == "ok":
                    break
            except OSError:
                assert time.monotonic() < deadline, (root / "serve.log").read_text()
                time.sleep(0.1)
    try:
        app.start()
        app.wait_log("tray state:")
        text = app.mcp("kg_read", {"cwd": str(folder)})
        sid = text.rsplit("Session: ", 1)[1][:8]
        for i in range(36):
            app.mcp("kg_put_node", {"session_id": sid, "level": "project", "id": f"note-{i}", "gist": f"Agent note {i} ".ljust(300, "z")})
        graph = json.loads((app.storage / "projects" / "gamma" / "graph.json").read_text())
        orphaned = [n for n in graph["nodes"].values() if "_orphaned_ts" in n]
        assert len(orphaned) > 20, f"the burst orphaned curated nodes: {len(orphaned)}"
        deadline = time.monotonic() + 10
        told = []
        while time.monotonic() < deadline and not told:
            told = [s for s in watch.summaries() if "left every read" in s]
            time.sleep(0.2)
        assert told == [f"KG Memory: {len(orphaned)} nodes of gamma left every read"], f"{watch.summaries()}\n{app.log.read_text()}"
        # More orphaning the same day is not told again.
        for i in range(36, 48):
            app.mcp("kg_put_node", {"session_id": sid, "level": "project", "id": f"note-{i}", "gist": f"Agent note {i} ".ljust(300, "z")})
        time.sleep(2)
        assert len([s for s in watch.summaries() if "left every read" in s]) == 1, watch.summaries()
    finally:
        watch.stop()
        app.stop()
        if server is not None:
            server.send_signal(signal.SIGTERM)
            assert server.wait(timeout=30) == 0


def test_a_write_acknowledged_before_sigterm_is_on_disk(desktop, root):
    app = App(root, free_port()).start()
    project = app.home / "proj"
    project.mkdir()
    text = app.mcp("kg_read", {"cwd": str(project)})
    sid = text.rsplit("Session: ", 1)[1][:8]
    assert app.mcp("kg_put_node", {"session_id": sid, "level": "project", "id": "last-word", "gist": "saved before quit"}).startswith("Node 'last-word' saved")
    assert app.stop() == 0
    graph = json.loads((app.storage / "projects" / "proj" / "graph.json").read_text())
    assert graph["nodes"]["last-word"]["gist"] == "saved before quit"


def test_a_foreign_listener_on_the_port_shows_the_error_state(desktop, root):
    port = free_port()
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    squatter.bind(("127.0.0.1", port))
    squatter.listen(8)
    watch = Notifications(root / "notify.log")
    app = App(root, port)
    try:
        app.start(healthy=False)
        app.wait_log("tray state: server error")
        assert app.proc.poll() is None, "the app keeps running to show the error"
        time.sleep(1.5)
        r, g, b = tray_colour(screenshot("tray-error.png"))
        assert abs(r - g) < 40 and abs(g - b) < 40, f"the error badge is grey, got rgb({r},{g},{b})"
        summaries = watch.summaries()
        assert "KG Memory could not start its server" in summaries, f"{summaries}\n{app.log.read_text()}"
    finally:
        watch.stop()
        app.stop()
        squatter.close()


class Squatter:
    """A program that is not KG Memory, holding a port: a bare TCP listener that never
    answers (a page loaded from it would wait forever), or a small HTTP server."""

    def __init__(self, port: int, kind: str):
        self.kind = kind
        if kind == "tcp":
            self.sock = socket.socket()
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind(("127.0.0.1", port))
            self.sock.listen(8)
        else:

            class Other(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    body = b"<!doctype html><title>Something else</title><p>Not KG Memory.</p>"
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)

                def log_message(self, *args):
                    pass

            self.http = http.server.ThreadingHTTPServer(("127.0.0.1", port), Other)
            threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        if self.kind == "tcp":
            self.sock.close()
        else:
            self.http.shutdown()
            self.http.server_close()


@pytest.mark.parametrize("kind", ["tcp", "http"])
def test_open_graph_view_with_the_port_taken_shows_what_to_do(desktop, root, kind):
    """Another program holds the port: the graph window says so, names the port, and
    says what to do, instead of a blank page that never loads."""
    port = free_port()
    squatter = Squatter(port, kind)
    app = App(root, port)
    try:
        app.start(healthy=False)
        app.wait_log("tray state: server error")
        report = app.open_window(timeout=20)
        time.sleep(0.5)
        shot = screenshot(f"tray-port-taken-{kind}.png")
        text = report.get("text", "")
        for must in (
            "KG Memory cannot show the graph view",
            f"Another program is using port {port} (127.0.0.1:{port})",
            "It is not a KG Memory server",
            "Stop the other program",
            "KG_HTTP_PORT",
        ):
            assert must in text, f"{must!r} is not on the page (see artifacts/{shot.name}): {report}"
        assert report["url"].startswith("kg-memory://"), report
        assert colours_in(shot, "900x600+40+60") > 4, f"the window drew nothing (see artifacts/{shot.name})"
        assert app.proc.poll() is None, "the app keeps running to show the error"
    finally:
        app.stop()
        squatter.close()


def test_a_display_that_cannot_be_opened_leaves_the_server_serving(root):
    """DISPLAY names the test's X server, but without its cookie (no XAUTHORITY) the
    window system cannot start. The app says why in one line of its own, keeps its
    server answering, and on SIGTERM drains, saves and exits 0. Before the fix (checked
    with a build of that commit) it panicked with a backtrace inside the window system
    and took the server down with it."""
    require_desktop()
    if not os.environ.get("XAUTHORITY"):
        pytest.skip("this X server accepts clients without a cookie, so it cannot be made unusable by dropping XAUTHORITY")
    app = App(root, free_port())
    env = app.env()
    env["XAUTHORITY"] = str(root / "no-such-cookie")
    env.pop("WAYLAND_DISPLAY", None)
    app.proc = subprocess.Popen([str(APP)], env=env, stdout=open(app.log, "ab"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while True:
        assert app.proc.poll() is None, f"the app exited instead of serving headless:\n{app.log.read_text()}"
        try:
            if app.health()["status"] == "ok":
                break
        except OSError:
            pass
        assert time.monotonic() < deadline, f"the server never answered /health:\n{app.log.read_text()}"
        time.sleep(0.1)
    app.wait_log("serving the memory headless")
    project = app.home / "headless"
    project.mkdir()
    sid = app.mcp("kg_read", {"cwd": str(project)}).rsplit("Session: ", 1)[1][:8]
    app.mcp("kg_put_node", {"session_id": sid, "level": "project", "id": "kept", "gist": "written while headless"})
    log = app.log.read_text(errors="replace")
    ours = [line for line in log.splitlines() if line.startswith("kg-memory-app:")]
    assert len(ours) == 1, log
    assert "cannot open the display (DISPLAY=" in ours[0] and "no window or tray icon" in ours[0], ours[0]
    assert f"http://127.0.0.1:{app.port}" in ours[0], ours[0]
    assert "panicked" not in log and "backtrace" not in log.lower(), log
    assert app.stop() == 0, app.log.read_text()
    graph = json.loads((app.storage / "projects" / "headless" / "graph.json").read_text())
    assert graph["nodes"]["kept"]["gist"] == "written while headless"


KG_MEMORY = Path(os.environ.get("KG_MEMORY_BIN") or REPO / "target" / "debug" / "kg-memory")


def test_sync_failing_for_a_day_notifies_once_per_streak(desktop, root):
    """A storage root that syncs with a bare repository, last synced two days ago and
    unable to reach the remote since: the tray says so once, and not again after a
    restart while the same streak goes on."""
    app = App(root, free_port())
    # Git reads none of the machine's own configuration.
    env = {**app.env(), "GIT_CONFIG_NOSYSTEM": "1"}
    app.env = lambda: env
    remote = root / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch=main", str(remote)], check=True, env=env)
    seed_busy_graph(app.storage, app.home)
    setup = subprocess.run([str(KG_MEMORY), "sync", "setup", str(remote)], env=env, capture_output=True, text=True)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    remote.rename(root / "remote-gone.git")
    record = app.storage / ".kg-sync-state.json"
    state = json.loads(record.read_text())
    state.update(last_success=NOW - 2 * DAY, offline_since=NOW - 2 * DAY + 3600, last_error="cannot reach the remote origin (gone)")
    record.write_text(json.dumps(state))
    watch = Notifications(root / "notify.log")
    told = "KG Memory could not sync for a day"
    try:
        app.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and told not in watch.summaries():
            time.sleep(0.2)
        assert watch.summaries().count(told) == 1, f"{watch.summaries()}\n{app.log.read_text()}"
        assert "tray sync state: Sync: offline since" in app.log.read_text()
        # The server's own sync at start failed as well, and kept the streak's start.
        state = json.loads(record.read_text())
        assert state["last_success"] == NOW - 2 * DAY and "cannot reach the remote" in state["last_error"]
        assert app.stop() == 0
        shown = app.log.read_text().count("tray sync state:")
        app.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and app.log.read_text().count("tray sync state:") == shown:
            time.sleep(0.2)
        assert app.log.read_text().count("tray sync state:") > shown, app.log.read_text()
        time.sleep(1.0)
        assert watch.summaries().count(told) == 1, f"told again after a restart: {watch.summaries()}"
    finally:
        watch.stop()
        app.stop()
