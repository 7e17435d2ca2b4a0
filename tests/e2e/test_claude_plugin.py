"""The Claude Code plugin from this repository, installed into the real Claude Code CLI.

`claude plugin marketplace add <repo>` + `claude plugin install knowledge-graph@kg-memory`,
then `claude -p "<prompt>"` in a project folder: Claude Code fires our SessionStart and
UserPromptSubmit hooks (before it stops with "Not logged in" — no login is needed for
this), the couriers (`kg-memory hook …`) reach the server, and the server shows a session
bound to that Claude session, preloaded, with the prompt answered by the full-read nudge.

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

    # The UserPromptSubmit courier reached /api/prompt_context, which answered with the
    # full-read nudge (the preload is partial and no full read happened yet).
    assert "KG preload shows only a PARTIAL view" in log, f"the prompt hook's answer is not in Claude's log\n{info}"
    assert "KG MEMORY PRELOADED" in log, f"the session-start hook's answer is not in Claude's log\n{info}"
