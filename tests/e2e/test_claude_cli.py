"""The real Claude Code CLI (installed by `cd tests && npm ci`) against a real kg-memory.

`claude mcp add -s user --transport http kg <url>` then `claude mcp list` / `claude mcp get kg` run
Claude Code's own MCP health check; it must report the server connected. Each run uses a
temporary HOME under /dev/shm and no network besides the loopback server
(CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, DISABLE_AUTOUPDATER=1). A recording proxy shows
what Claude Code actually sends, and Claude's own debug log (`--debug-file`) is attached to
every failure.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import free_port, server_binary
from kg_wiring import context_of, kg_memory, listening, stop_holder, transcript_hooks, wait_for_holder
from logging_proxy import LoggingProxy

TESTS_DIR = Path(__file__).resolve().parents[1]
CLAUDE = TESTS_DIR / "node_modules" / ".bin" / "claude"

pytestmark = pytest.mark.skipif(
    not CLAUDE.exists(),
    reason=f"Claude Code CLI not installed ({CLAUDE} missing): run `cd tests && npm ci`",
)

CONNECTED = re.compile(r"[✔✓] Connected")
# The reference's nine, with ours: a rename beside the write, the touch fix last.
TOOLS = [
    "kg_read",
    "kg_search",
    "kg_put_node",
    "kg_rename_node",
    "kg_put_edge",
    "kg_delete_node",
    "kg_delete_edge",
    "kg_useful",
    "kg_sync",
    "kg_progress",
    "kg_fix_touch",
]


@dataclass
class Claude:
    home: Path
    project: Path
    env: dict[str, str]
    debug_file: Path

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(CLAUDE), "--debug-file", str(self.debug_file), *args],
            cwd=self.project,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def debug_mcp_lines(self) -> str:
        try:
            lines = self.debug_file.read_text(errors="replace").splitlines()
        except OSError:
            return "<no Claude debug log>"
        return "\n".join(l for l in lines if "MCP" in l or "mcp" in l)[-6000:]


@pytest.fixture
def claude(shm_dir) -> Claude:
    home = shm_dir / "claude-home"
    project = home / "work"
    project.mkdir(parents=True)
    # A minimal, hermetic environment: no inherited Anthropic/Claude settings or credentials.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "CLAUDE", "KG_", "MCP_", "NODE_OPTIONS"))
        and k not in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")
    }
    env.update(
        HOME=str(home),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        NO_COLOR="1",
        TERM="dumb",
        NO_PROXY="127.0.0.1,localhost",
    )
    return Claude(home=home, project=project, env=env, debug_file=shm_dir / "claude-debug.log")


def describe(claude: Claude, *results: subprocess.CompletedProcess, proxy: LoggingProxy | None = None) -> str:
    parts = []
    for r in results:
        parts.append(f"$ {' '.join(r.args[3:])}\nexit {r.returncode}\n--- stdout ---\n{r.stdout}--- stderr ---\n{r.stderr}")
    if proxy is not None:
        parts.append(f"--- HTTP exchange seen by the recording proxy ---\n{proxy.transcript()}")
    parts.append(f"--- Claude debug log (MCP lines) ---\n{claude.debug_mcp_lines()}")
    return "\n".join(parts)


def add_and_check(claude: Claude, name: str, url: str, proxy: LoggingProxy | None = None):
    added = claude.run("mcp", "add", "-s", "user", "--transport", "http", name, url)
    assert added.returncode == 0, describe(claude, added, proxy=proxy)
    listed = claude.run("mcp", "list")
    got = claude.run("mcp", "get", name)
    return added, listed, got


def assert_connected(claude: Claude, name: str, url: str, listed, got, proxy: LoggingProxy | None = None) -> None:
    info = describe(claude, listed, got, proxy=proxy)
    line = next((l for l in listed.stdout.splitlines() if l.startswith(f"{name}: ")), None)
    assert line is not None, f"`claude mcp list` does not show {name}\n{info}"
    assert url.rstrip("/") in line, info
    assert CONNECTED.search(line), f"Claude Code does not report {name} connected: {line!r}\n{info}"
    assert listed.returncode == 0, info
    status = next((l for l in got.stdout.splitlines() if l.strip().startswith("Status:")), "")
    assert CONNECTED.search(status), f"`claude mcp get {name}` status: {status!r}\n{info}"
    assert got.returncode == 0, info


def test_cli_version(claude):
    r = claude.run("--version")
    assert r.returncode == 0, r.stderr
    assert re.match(r"2\.\d+\.\d+ \(Claude Code\)", r.stdout.strip()), r.stdout


def test_claude_mcp_list_reports_connected(kg_server, claude):
    """Directly against the server, exactly as a user would register it."""
    _, listed, got = add_and_check(claude, "kg", kg_server.mcp_url)
    assert_connected(claude, "kg", kg_server.mcp_url, listed, got)


def test_claude_health_check_exchange(kg_server, claude):
    """What Claude Code sends (through a recording proxy): every answer must be a success."""
    with LoggingProxy(kg_server.port) as proxy:
        _, listed, got = add_and_check(claude, "kg", proxy.url, proxy)
        assert_connected(claude, "kg", proxy.url, listed, got, proxy)
    info = describe(claude, listed, got, proxy=proxy)
    assert proxy.exchanges, info
    for ex in proxy.exchanges:
        if ex.method == "GET" and ex.path == "/":
            assert ex.status == 405, info  # stateless mode: no SSE stream to offer
        else:
            assert ex.method == "POST" and ex.path == "/", info
            assert ex.status in (200, 202), info
            assert ex.header("mcp-session-id") is None, info
            assert "mcp-session-id" not in {k.lower() for k in ex.response_headers}, info
    # The first message of each check is the protocol probe: discover (2026-07-28) or initialize.
    first = proxy.exchanges[0]
    assert first.rpc_method in ("server/discover", "initialize"), info
    assert "error" not in (first.reply or {}), info
    # The check lists the tools: all of them must reach Claude Code.
    lists = [e for e in proxy.exchanges if e.rpc_method == "tools/list"]
    assert lists, info
    for e in lists:
        names = [t["name"] for t in e.reply["result"]["tools"]]
        assert names == TOOLS, info


def test_claude_legacy_handshake_accepts_405_on_get(kg_server, claude):
    """Force Claude Code onto the classic initialize handshake (the proxy refuses
    `server/discover`, as an older server would) and check that our 405 answer to its
    `GET /` stream probe still leaves the server reported as connected."""
    with LoggingProxy(kg_server.port, reject_methods=("server/discover",)) as proxy:
        _, listed, got = add_and_check(claude, "kg", proxy.url, proxy)
        assert_connected(claude, "kg", proxy.url, listed, got, proxy)
    info = describe(claude, listed, got, proxy=proxy)
    seen = [(e.method, e.rpc_method, e.status) for e in proxy.exchanges]
    assert ("POST", "initialize", 200) in seen, info
    assert ("POST", "notifications/initialized", 202) in seen, info
    gets = [e for e in proxy.exchanges if e.method == "GET"]
    assert gets, f"Claude Code sent no GET / after initialize (it used to)\n{info}"
    for e in gets:
        assert e.status == 405, info
        assert e.header("accept") == "text/event-stream", info
    init = next(e for e in proxy.exchanges if e.rpc_method == "initialize")
    assert init.reply["result"]["serverInfo"]["name"] == "knowledge-graph-mcp", info
    assert ("POST", "tools/list", 200) in seen, info


def test_claude_reports_a_stopped_server_as_failed(kg_server_factory, claude):
    """Control: the Connected assertion is meaningful — a dead URL is not reported connected."""
    server = kg_server_factory()
    url = server.mcp_url
    assert server.stop() == 0
    claude.run("mcp", "add", "-s", "user", "--transport", "http", "kg", url)
    listed = claude.run("mcp", "list")
    line = next((l for l in listed.stdout.splitlines() if l.startswith("kg: ")), "")
    assert line and not CONNECTED.search(line), describe(claude, listed)


def test_user_scope_connects_from_any_folder(kg_server, claude):
    """`claude mcp add -s user` (what the README and skills say) works outside the folder
    where it ran; the default (local) scope would not."""
    add_and_check(claude, "kg", kg_server.mcp_url)
    elsewhere = claude.home / "another-project"
    elsewhere.mkdir()
    listed = run_claude(claude, "mcp", "list", cwd=elsewhere)
    line = next((l for l in listed.stdout.splitlines() if l.startswith("kg: ")), "")
    assert CONNECTED.search(line), describe(claude, listed)


def run_claude(claude: Claude, *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120):
    return subprocess.run(
        [str(CLAUDE), "--debug-file", str(claude.debug_file), *args],
        cwd=cwd,
        env=env or claude.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def no_stray_server(claude: Claude, *ports: int) -> None:
    """No second server: nothing on `ports`, no default storage root in Claude's HOME, no
    pid file of a server a hook would have started there."""
    for port in ports:
        assert not listening(port), f"a server listens on port {port}"
    assert not (claude.home / ".knowledge-graph").exists(), "a server was started over ~/.knowledge-graph"
    state = claude.home / ".local" / "state" / "kg-memory"
    pids = sorted(p.name for p in state.glob("server-*.pid")) if state.is_dir() else []
    assert not pids, f"a hook started a server of its own: {pids}"


def test_installed_hooks_and_mcp_entry_reach_a_server_on_another_port_and_root(kg_server, claude):
    """The installer writes the port and storage root into every entry, so the hooks reach
    the server they were installed for even when Claude's environment says otherwise."""
    installed = kg_memory(
        "--port", str(kg_server.port), "--storage", str(kg_server.storage), "install", "claude-code", home=claude.home
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    settings = json.loads((claude.home / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert f"--port {kg_server.port} --storage {kg_server.storage}" in command, command

    # Claude Code (and so every hook) runs with another port in its environment.
    decoy = free_port()
    env = {**claude.env, "KG_HTTP_PORT": str(decoy)}
    project = kg_server.make_project("wired")
    listed = run_claude(claude, "mcp", "list", cwd=project, env=env)
    line = next((l for l in listed.stdout.splitlines() if l.startswith("kg: ")), "")
    assert kg_server.mcp_url.rstrip("/") in line and CONNECTED.search(line), describe(claude, listed)

    prompt = run_claude(claude, "-p", "How do releases work here?", cwd=project, env=env)
    info = describe(claude, prompt)
    sessions = json.loads((kg_server.storage / "sessions.json").read_text())
    bound = [r for r in sessions.values() if r.get("claude_sid")]
    assert len(bound) == 1 and bound[0]["project_path"] == str(project), f"{sessions}\n{info}"
    hooks = transcript_hooks(claude.home)
    assert any("KG MEMORY PRELOADED" in c for c in context_of(hooks, "SessionStart")), f"{hooks}\n{info}"
    no_stray_server(claude, decoy)


def test_installed_hooks_start_the_server_they_were_installed_for(shm_dir, claude):
    """No server running: the session-start hook starts one on the installed port and
    storage root, not on the port in Claude's environment over ~/.knowledge-graph."""
    storage = shm_dir / "my storage"
    port, decoy = free_port(), free_port()
    installed = kg_memory("--port", str(port), "--storage", str(storage), "install", "claude-code", home=claude.home)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    env = {**claude.env, "KG_HTTP_PORT": str(decoy)}
    try:
        prompt = run_claude(claude, "-p", "hello", cwd=claude.project, env=env)
        record = wait_for_holder(storage)
        assert record["port"] == port, f"{record}\n{describe(claude, prompt)}"
        assert not listening(decoy)
        assert not (claude.home / ".knowledge-graph").exists()
    finally:
        stop_holder(storage)


def test_install_honours_claude_config_dir(kg_server, claude, shm_dir):
    """With CLAUDE_CONFIG_DIR set, Claude Code reads hooks and MCP servers only from that
    folder (never ~/.claude): the installer writes there, `claude mcp list` sees the entry,
    the session-start hook reaches the server, and `kg-memory status` names those files."""
    config = shm_dir / "claude-config"
    config.mkdir()
    where = ("--port", str(kg_server.port), "--storage", str(kg_server.storage))
    installed = kg_memory(*where, "install", "claude-code", home=claude.home, CLAUDE_CONFIG_DIR=str(config))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    settings = json.loads((config / "settings.json").read_text())
    assert "hook session-start" in settings["hooks"]["SessionStart"][0]["hooks"][0]["command"], settings
    assert json.loads((config / ".claude.json").read_text())["mcpServers"]["kg"]["url"] == kg_server.mcp_url
    assert sorted(p.name for p in claude.home.glob(".claude*")) == [], "installer wrote under HOME"

    env = {**claude.env, "CLAUDE_CONFIG_DIR": str(config)}
    project = kg_server.make_project("config-dir")
    listed = run_claude(claude, "mcp", "list", cwd=project, env=env)
    line = next((l for l in listed.stdout.splitlines() if l.startswith("kg: ")), "")
    assert kg_server.mcp_url.rstrip("/") in line and CONNECTED.search(line), describe(claude, listed)

    prompt = run_claude(claude, "-p", "hi", cwd=project, env=env)
    info = describe(claude, prompt)
    sessions = json.loads((kg_server.storage / "sessions.json").read_text())
    bound = [r for r in sessions.values() if r.get("claude_sid")]
    assert len(bound) == 1 and bound[0]["project_path"] == str(project), f"{sessions}\n{info}"
    transcripts = list((config / "projects").glob("*/*.jsonl"))
    assert transcripts and any("KG MEMORY PRELOADED" in t.read_text() for t in transcripts), info

    status = kg_memory(*where, "status", home=claude.home, cwd=project, CLAUDE_CONFIG_DIR=str(config))
    assert f"in {config / 'settings.json'}:" in status.stdout, status.stdout
    assert f"(user scope, {config / '.claude.json'})" in status.stdout, status.stdout


def test_a_hook_with_a_bad_flag_is_refused_without_blocking_claude(kg_server, claude):
    """An unknown flag gets the usage on stderr and exit 1, which Claude Code reports and
    goes on (exit 2 would block the prompt)."""
    exe = server_binary()
    settings_dir = claude.home / ".claude"
    settings_dir.mkdir(parents=True, exist_ok=True)
    (settings_dir / "settings.json").write_text(
        json.dumps(
            {
                "hooks": {
                    "UserPromptSubmit": [
                        {"hooks": [{"type": "command", "command": f"{exe} hook prompt-submit --port {kg_server.port} --bogus"}]}
                    ]
                }
            }
        )
    )
    prompt = run_claude(claude, "-p", "hello there", cwd=claude.project)
    out = prompt.stdout + prompt.stderr
    assert "blocked by hook" not in out, out
    assert "Not logged in" in out, f"Claude did not go on to the model call\n{out}"
    log = claude.debug_file.read_text(errors="replace")
    assert "UserPromptSubmit (UserPromptSubmit) error: status code 1" in log
    assert "unexpected argument '--bogus'" in log and "Usage: kg-memory" in log


def auto_memory_folders(claude: Claude) -> list[Path]:
    """Claude Code's auto-memory folders: it makes one per project when auto-memory is on."""
    return sorted((claude.home / ".claude" / "projects").glob("*/memory"))


def test_disable_auto_memory_turns_it_off_and_uninstall_restores_the_users_value(kg_server, claude):
    """`--disable-auto-memory` sets Claude Code's documented `autoMemoryEnabled: false`
    (observed: Claude then makes no ~/.claude/projects/<p>/memory folder); uninstall puts
    back the user's own value, byte for byte."""
    settings_path = claude.home / ".claude" / "settings.json"
    settings_path.parent.mkdir(parents=True, exist_ok=True)
    users = '{\n  "autoMemoryEnabled": true,\n  "theme": "dark"\n}\n'
    settings_path.write_text(users)
    where = ("--port", str(kg_server.port), "--storage", str(kg_server.storage))
    installed = kg_memory(*where, "install", "claude-code", "--disable-auto-memory", home=claude.home)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "turn off Claude Code's auto-memory" in installed.stdout
    assert json.loads(settings_path.read_text())["autoMemoryEnabled"] is False

    first = kg_server.make_project("am-off")
    run_claude(claude, "-p", "hello", cwd=first)
    assert auto_memory_folders(claude) == [], "auto-memory still on"

    removed = kg_memory(*where, "uninstall", "claude-code", home=claude.home)
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert "restore autoMemoryEnabled: true" in removed.stdout
    assert settings_path.read_text() == users
    second = kg_server.make_project("am-on")
    run_claude(claude, "-p", "hello", cwd=second)
    # Claude Code names a project's folder after its path, every other character a dash.
    assert [p.parent.name for p in auto_memory_folders(claude)] == [re.sub(r"[^A-Za-z0-9]", "-", str(second))]


def test_install_keeps_a_hand_added_entry_and_uninstall_leaves_it(kg_server, claude):
    """`claude mcp add` first (the by-hand route), then the installer for the hooks: the
    person's entry is kept as Claude Code wrote it, stays connected, and survives uninstall."""
    where = ("--port", str(kg_server.port), "--storage", str(kg_server.storage))
    added = claude.run("mcp", "add", "-s", "user", "--transport", "http", "kg", kg_server.mcp_url)
    assert added.returncode == 0, describe(claude, added)
    written = (claude.home / ".claude.json").read_text()
    entry = json.loads(written)["mcpServers"]["kg"]

    installed = kg_memory(*where, "install", "claude-code", home=claude.home)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert 'keep the MCP server "kg" you added by hand' in installed.stdout, installed.stdout
    assert json.loads((claude.home / ".claude.json").read_text())["mcpServers"]["kg"] == entry
    listed = claude.run("mcp", "list")
    line = next((l for l in listed.stdout.splitlines() if l.startswith("kg: ")), "")
    assert CONNECTED.search(line), describe(claude, listed)

    removed = kg_memory(*where, "uninstall", "claude-code", home=claude.home)
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert 'remove MCP server "kg"' not in removed.stdout, removed.stdout
    assert json.loads((claude.home / ".claude.json").read_text())["mcpServers"]["kg"] == entry
    got = claude.run("mcp", "get", "kg")
    assert got.returncode == 0 and CONNECTED.search(got.stdout), describe(claude, got)

    # An entry by hand that points elsewhere stops the install; nothing changes.
    claude.run("mcp", "remove", "-s", "user", "kg")
    other = f"http://127.0.0.1:{free_port()}/"
    claude.run("mcp", "add", "-s", "user", "--transport", "http", "kg", other)
    before = (claude.home / ".claude.json").read_text()
    refused = kg_memory(*where, "install", "claude-code", home=claude.home)
    assert refused.returncode != 0, refused.stdout
    assert "added by hand" in refused.stderr and other in refused.stderr, refused.stderr
    assert (claude.home / ".claude.json").read_text() == before


def system_messages(claude: Claude) -> list[str]:
    """What the hooks showed the person (Claude Code's `systemMessage`) in the newest session."""
    return [h["content"] for h in transcript_hooks(claude.home) if h["type"] == "hook_system_message"]


def test_a_session_that_starts_without_its_server_tells_the_person(shm_dir, claude):
    """No server runs: the hook starts one, too late for this session's tools; the person
    is told so, with the step that brings memory into this session."""
    storage = shm_dir / "memory"
    port = free_port()
    installed = kg_memory("--port", str(port), "--storage", str(storage), "install", "claude-code", home=claude.home)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    # The installer's closing words name the path with no first session lost.
    assert "Start the server before Claude Code" in installed.stdout, installed.stdout
    assert "let the next Claude Code session start it" not in installed.stdout
    try:
        prompt = run_claude(claude, "-p", "hello", cwd=claude.project)
        messages = system_messages(claude)
        assert any(
            m.startswith("KG Memory: no server was running") and "/mcp" in m and "Reconnect" in m for m in messages
        ), f"{messages}\n{describe(claude, prompt)}"
        assert wait_for_holder(storage)["port"] == port
    finally:
        stop_holder(storage)


def test_a_port_held_by_another_program_is_named_to_the_person(shm_dir, claude):
    """Another program on the port: no server is started in vain, and the person reads why."""
    import http.server
    import threading

    class NotKg(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_error(404)

        def log_message(self, *args):
            pass

    squatter = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotKg)
    threading.Thread(target=squatter.serve_forever, daemon=True).start()
    port = squatter.server_address[1]
    storage = shm_dir / "memory"
    try:
        installed = kg_memory("--port", str(port), "--storage", str(storage), "install", "claude-code", home=claude.home)
        assert installed.returncode == 0, installed.stdout + installed.stderr
        prompt = run_claude(claude, "-p", "hello", cwd=claude.project)
        messages = system_messages(claude)
        assert any(
            f"port {port} is taken by another program" in m and "kg-memory install claude-code --port" in m
            for m in messages
        ), f"{messages}\n{describe(claude, prompt)}"
        assert not (storage / ".kg-memory.lock").exists(), "a server was started in vain"
    finally:
        squatter.shutdown()


def test_another_roots_server_on_the_port_is_named_to_the_person(kg_server, shm_dir, claude):
    """The port answers with another storage root's server: the person learns that the
    session has no memory of its own, and how to get it."""
    mine = shm_dir / "mine"
    installed = kg_memory(
        "--port", str(kg_server.port), "--storage", str(mine), "install", "claude-code", home=claude.home
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    prompt = run_claude(claude, "-p", "hello", cwd=claude.project)
    messages = system_messages(claude)
    assert any(
        m.startswith("KG Memory is off in this session") and f"serves the storage root {kg_server.storage}" in m
        for m in messages
    ), f"{messages}\n{describe(claude, prompt)}"
    no_stray_server(claude)
