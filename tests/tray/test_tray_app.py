"""The real tray app (`kg-memory-app`) under Xvfb, in a D-Bus session with a real
notification daemon (dunst) and a standalone tray host (trayer).

Run by scripts/test.sh as
  xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- .venv/bin/python -m pytest tests/tray
Screenshots land in artifacts/ (look at them).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
from conftest import free_port, make_temp_root, write_clock  # noqa: E402

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
