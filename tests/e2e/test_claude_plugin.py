"""The Claude Code plugin from this repository, installed into the real Claude Code CLI.

`claude plugin marketplace add <repo>` + `claude plugin install knowledge-graph@kg-memory`,
then `claude -p "<prompt>"` in a project folder: Claude Code fires our SessionStart and
UserPromptSubmit hooks (before it stops with "Not logged in" — no login is needed for
this), the couriers (`kg-memory hook …`) reach the server, and the server shows a session
bound to that Claude session, preloaded, with the prompt answered by its recall (the
preload held everything, so the recall points at the preloaded node that fits).

The plugin is the top-level `hooks/` folder (manifest, `hooks.json`, skills, `.mcp.json`);
the marketplace at the repository root points at it. Claude Code copies the plugin's whole
folder on install, so the installed copy must hold exactly that folder's files.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from conftest import REPO, server_binary
from kg_wiring import context_of, kg_memory, transcript_hooks

CLAUDE = REPO / "tests" / "node_modules" / ".bin" / "claude"
PLUGIN = REPO / "hooks"

pytestmark = pytest.mark.skipif(
    not CLAUDE.exists(), reason=f"Claude Code CLI not installed ({CLAUDE} missing): run `cd tests && npm ci`"
)


def claude_env(home: Path, port: int) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "CLAUDE", "KG_", "MCP_"))
    }
    env.update(
        HOME=str(home),
        # The hooks run `kg-memory`: the binary under test comes first on PATH.
        PATH=f"{server_binary().parent}{os.pathsep}{env.get('PATH', '')}",
        KG_HTTP_PORT=str(port),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        NO_COLOR="1",
        TERM="dumb",
        NO_PROXY="127.0.0.1,localhost",
    )
    return env


def run(env, cwd, *args, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(CLAUDE), *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_plugin_and_marketplace_validate(shm_dir):
    home = shm_dir / "claude-home"
    home.mkdir()
    env = claude_env(home, 0)
    for target in (PLUGIN, REPO):  # the plugin folder, then the marketplace at the root
        checked = run(env, shm_dir, "plugin", "validate", "--strict", str(target))
        assert checked.returncode == 0, checked.stdout + checked.stderr


def test_plugin_hooks_reach_the_server(kg_server, shm_dir):
    claude_home = shm_dir / "claude-home"
    claude_home.mkdir()
    project = kg_server.make_project("plugged")
    env = claude_env(claude_home, kg_server.port)
    debug = shm_dir / "claude-debug.log"
    # Something to preload.
    seed = json.dumps({"level": "user", "id": "release-checklist", "gist": "Releases: tag vX.Y.Z, CI publishes"}).encode()
    req = urllib.request.Request(
        f"{kg_server.base_url}/api/nodes", data=seed, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(req, timeout=5) as r:
        assert r.status == 200

    added = run(env, project, "plugin", "marketplace", "add", str(REPO))
    assert added.returncode == 0, added.stdout + added.stderr
    installed = run(env, project, "plugin", "install", "knowledge-graph@kg-memory")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    listed = run(env, project, "plugin", "list", "--json")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    [plugin] = [p for p in json.loads(listed.stdout) if p["id"] == "knowledge-graph@kg-memory"]
    assert files_under(Path(plugin["installPath"])) == files_under(PLUGIN), "the installed copy is not the hooks/ folder"

    prompt = run(env, project, "--debug-file", str(debug), "-p", "How does the release checklist work here?")
    log = debug.read_text(errors="replace") if debug.exists() else "<no debug log>"
    info = f"exit {prompt.returncode}\n--- stdout ---\n{prompt.stdout}\n--- stderr ---\n{prompt.stderr}\n--- debug (hooks) ---\n" + "\n".join(
        l for l in log.splitlines() if "hook" in l.lower()
    )[-8000:]

    # The SessionStart courier bootstrapped a session bound to this Claude session.
    sessions = json.loads((kg_server.storage / "sessions.json").read_text())
    bound = [(sid, r) for sid, r in sessions.items() if r.get("claude_sid")]
    assert len(bound) == 1, f"expected one session bound to Claude Code: {sessions}\n{info}"
    sid, record = bound[0]
    assert record["project_path"] == str(project), info
    # Preloaded: the session shows the seeded gist as already shown (live state, not yet flushed).
    query = urllib.parse.urlencode({"project_path": str(project)})
    with urllib.request.urlopen(f"{kg_server.base_url}/api/session_state?{query}", timeout=5) as r:
        state = json.loads(r.read())
    assert state["found"] and state["session_id"] == sid, f"{state}\n{info}"
    assert state["preloaded_count"] == 1 and not state["full_read_done"], f"{state}\n{info}"

    # The plugin's MCP entry follows KG_HTTP_PORT (`${KG_HTTP_PORT:-8765}` in .mcp.json).
    mcp = run(env, project, "mcp", "list")
    line = next((l for l in mcp.stdout.splitlines() if l.startswith("plugin:knowledge-graph:kg: ")), "")
    assert f"{kg_server.base_url}/" in line and "Connected" in line, mcp.stdout + mcp.stderr

    # The UserPromptSubmit courier reached /api/prompt_context, which answered with the
    # recall: the preload was complete (no full-read nudge is owed), and the node that
    # fits the prompt is already in context, so it is pointed at, not repeated.
    assert "- [user] release-checklist (in context)" in log, f"the prompt hook's answer is not in Claude's log\n{info}"
    assert "KG preload shows only a PARTIAL view" not in log, f"no nudge after a complete preload\n{info}"
    assert "KG MEMORY PRELOADED" in log, f"the session-start hook's answer is not in Claude's log\n{info}"


def install_plugin(env, cwd) -> None:
    added = run(env, cwd, "plugin", "marketplace", "add", str(REPO))
    assert added.returncode == 0, added.stdout + added.stderr
    installed = run(env, cwd, "plugin", "install", "knowledge-graph@kg-memory")
    assert installed.returncode == 0, installed.stdout + installed.stderr


def test_the_installer_refuses_beside_the_plugin(kg_server, shm_dir):
    claude_home = shm_dir / "claude-home"
    claude_home.mkdir()
    env = claude_env(claude_home, kg_server.port)
    install_plugin(env, shm_dir)
    settings = (claude_home / ".claude" / "settings.json").read_text()
    refused = kg_memory("install", "claude-code", home=claude_home)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "the knowledge-graph plugin is installed in Claude Code" in refused.stderr, refused.stderr
    assert "`claude plugin uninstall knowledge-graph@kg-memory`" in refused.stderr, refused.stderr
    assert (claude_home / ".claude" / "settings.json").read_text() == settings
    assert not (claude_home / ".claude.json").read_text().count('"kg"')


def test_plugin_and_installer_together_preload_once_and_say_which_to_remove(kg_server, shm_dir):
    """Installer first (it cannot see a plugin yet), then the plugin: Claude Code runs both
    routes' hooks, and only one answers."""
    claude_home = shm_dir / "claude-home"
    claude_home.mkdir()
    project = kg_server.make_project("twice")
    env = claude_env(claude_home, kg_server.port)
    # Something the prompt's recall points at, so that a prompt answer exists to count.
    seed = json.dumps({"level": "user", "id": "release-checklist", "gist": "Releases: tag vX.Y.Z, CI publishes"}).encode()
    req = urllib.request.Request(
        f"{kg_server.base_url}/api/nodes", data=seed, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(req, timeout=5) as r:
        assert r.status == 200
    where = ("--port", str(kg_server.port), "--storage", str(kg_server.storage))
    installed = kg_memory(*where, "install", "claude-code", home=claude_home)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    install_plugin(env, project)

    debug = shm_dir / "claude-debug.log"
    prompt = run(env, project, "--debug-file", str(debug), "-p", "How does the release checklist work here?")
    hooks = transcript_hooks(claude_home)
    info = f"{prompt.stdout}{prompt.stderr}\n{json.dumps(hooks, indent=1)[-6000:]}"
    log = debug.read_text(errors="replace")
    finished = [l for l in log.splitlines() if "Hooks: SessionStart:startup [" in l and "finished with status 0" in l]
    assert len(finished) == 2 and any("--via plugin] (plugin knowledge-graph@" in l for l in finished), (
        f"both routes' SessionStart hooks ran\n{finished}\n{info}"
    )
    # Only the installer's printed anything (a hook with no output leaves no hook_success).
    ran = [h["command"] for h in hooks if h["type"] == "hook_success" and h["hookEvent"] == "SessionStart"]
    assert len(ran) == 1 and "--via plugin" not in ran[0], f"the plugin's hook stood aside\n{info}"
    preloads = [c for c in context_of(hooks, "SessionStart") if "KG MEMORY PRELOADED" in c]
    assert len(preloads) == 1, f"preloaded once\n{info}"
    assert len(context_of(hooks, "UserPromptSubmit")) == 1, f"one prompt answer\n{info}"
    messages = [h["content"] for h in hooks if h["type"] == "hook_system_message"]
    assert any(
        "connected to Claude Code twice" in m
        and "`kg-memory uninstall claude-code`" in m
        and "`claude plugin uninstall knowledge-graph@kg-memory`" in m
        for m in messages
    ), f"{messages}\n{info}"
    sessions = json.loads((kg_server.storage / "sessions.json").read_text())
    assert len([r for r in sessions.values() if r.get("claude_sid")]) == 1, sessions

    status = kg_memory(*where, "status", home=claude_home, cwd=project)
    assert "! KG Memory is connected to Claude Code twice" in status.stdout, status.stdout


def test_the_plugin_follows_the_port_in_claude_codes_own_settings(kg_server, shm_dir):
    """The README's way to point the plugin elsewhere: KG_HTTP_PORT and KG_STORAGE_ROOT
    in the `env` of ~/.claude/settings.json reach both the MCP URL and the hooks."""
    claude_home = shm_dir / "claude-home"
    claude_home.mkdir()
    project = kg_server.make_project("settings-env")
    env = claude_env(claude_home, kg_server.port)
    del env["KG_HTTP_PORT"]
    install_plugin(env, project)
    settings_path = claude_home / ".claude" / "settings.json"
    settings = json.loads(settings_path.read_text())
    settings["env"] = {"KG_HTTP_PORT": str(kg_server.port), "KG_STORAGE_ROOT": str(kg_server.storage)}
    settings_path.write_text(json.dumps(settings))
    mcp = run(env, project, "mcp", "list")
    line = next((l for l in mcp.stdout.splitlines() if l.startswith("plugin:knowledge-graph:kg: ")), "")
    assert f"{kg_server.base_url}/" in line and "Connected" in line, mcp.stdout + mcp.stderr
    run(env, project, "-p", "hello")
    sessions = json.loads((kg_server.storage / "sessions.json").read_text())
    assert [r["project_path"] for r in sessions.values() if r.get("claude_sid")] == [str(project)], sessions
    assert not (claude_home / ".knowledge-graph").exists()
