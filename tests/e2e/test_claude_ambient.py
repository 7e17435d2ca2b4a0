"""What the real Claude Code CLI's hooks bring into a session (issue 19, items 4 and 5),
with the plugin installed from this repository and `claude -p` (the hooks fire before
it stops with "Not logged in"; their answers are in Claude's debug log):

- the first prompt of a session, asked before the full read, gets the memory that
  matches it along with the full-read nudge;
- a session in a folder outside HOME still gets the user graph, with one line saying
  why there is no project memory and how to have one.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from conftest import REPO
from test_claude_plugin import CLAUDE, claude_env, run

pytestmark = pytest.mark.skipif(
    not CLAUDE.exists(), reason=f"Claude Code CLI not installed ({CLAUDE} missing): run `cd tests && npm ci`"
)


def post(server, path: str, body: dict) -> dict:
    req = urllib.request.Request(
        f"{server.base_url}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(req, timeout=5) as r:
        assert r.status == 200
        return json.loads(r.read())


def claude_with_plugin(server, shm_dir: Path) -> dict[str, str]:
    home = shm_dir / "claude-home"
    home.mkdir()
    env = claude_env(home, server.port)
    for args in (("plugin", "marketplace", "add", str(REPO)), ("plugin", "install", "knowledge-graph@kg-memory")):
        done = run(env, shm_dir, *args)
        assert done.returncode == 0, done.stdout + done.stderr
    return env


def ask(env: dict[str, str], folder: Path, prompt: str, debug: Path) -> str:
    """Run `claude -p` in `folder`; Claude's debug log, where the hooks' answers are."""
    done = run(env, folder, "--debug-file", str(debug), "-p", prompt)
    log = debug.read_text(errors="replace") if debug.exists() else ""
    assert log, f"no debug log; exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return log


def test_the_first_prompt_gets_the_memory_that_matches_it(kg_server, shm_dir):
    project = kg_server.make_project("shop")
    # An archived node: the preload shows only its id, so the prompt's recall is what
    # brings its gist in.
    post(
        kg_server,
        "/api/nodes",
        {
            "level": "project",
            "project_path": str(project),
            "id": "billing-webhook-signature",
            "gist": "Stripe webhook signatures fail when the raw body is parsed before verifying",
        },
    )
    post(
        kg_server,
        "/api/view/step",
        {"level": "project", "project_path": str(project), "actions": [{"kind": "archive", "id": "billing-webhook-signature"}]},
    )
    env = claude_with_plugin(kg_server, shm_dir)
    log = ask(env, project, "Why does the Stripe webhook signature check fail?", shm_dir / "first.log")
    # The preload held every active node and the archived one's anchor: no full read
    # is owed, so the prompt gets its recall without the full-read nudge.
    assert "KG MEMORY PRELOADED — complete" in log, "the complete preload"
    assert "KG preload shows only a PARTIAL view" not in log, "no nudge after a complete preload"
    assert "KG recall — memory matching this prompt:" in log, "the recall"
    assert "Stripe webhook signatures fail when the raw body is parsed" in log


def test_a_folder_outside_home_gets_the_user_graph_and_the_reason(kg_server, shm_dir):
    post(kg_server, "/api/nodes", {"level": "user", "id": "style-tabs", "gist": "The user indents with tabs everywhere"})
    outside = shm_dir / "outside" / "scratch"
    outside.mkdir(parents=True)
    env = claude_with_plugin(kg_server, shm_dir)
    log = ask(env, outside, "Set up a quick script here", shm_dir / "outside.log")
    assert "KG MEMORY PRELOADED" in log, "the preload"
    assert "style-tabs" in log, "the user graph is in it"
    assert "No project memory in this session" in log and "KG_PROJECT_ROOTS" in log, "the one-line reason"
    # No project graph was made for the folder.
    assert not (kg_server.storage / "projects" / "scratch").exists()
