"""The project a real Claude Code CLI session belongs to (issue 37, item 5), with the
plugin installed from this repository and `claude -p` (the hooks fire before it stops
with "Not logged in"; their answers are in Claude's debug log):

- a session started in a subfolder of a project preloads the project's graph;
- a session started in a linked git worktree (`git worktree add`) preloads the graph of
  the repository's main checkout.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_claude_ambient import ask, claude_with_plugin, post
from test_claude_plugin import CLAUDE

pytestmark = pytest.mark.skipif(
    not CLAUDE.exists(), reason=f"Claude Code CLI not installed ({CLAUDE} missing): run `cd tests && npm ci`"
)

GIST = "Checkout totals are computed in whole cents, never floats"


def git(folder: Path, *args: str) -> None:
    done = subprocess.run(
        ["git", "-c", "user.name=KG Test", "-c", "user.email=kg@test.invalid", "-c", "init.defaultBranch=main", *args],
        cwd=folder,
        env={"PATH": "/usr/bin:/bin", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


def seed(server, project: Path) -> None:
    post(server, "/api/nodes", {"level": "project", "project_path": str(project), "id": "checkout-totals", "gist": GIST})


def test_a_session_in_a_subfolder_preloads_the_projects_graph(kg_server, shm_dir):
    project = kg_server.make_project("shop")
    seed(kg_server, project)
    deep = project / "src" / "billing"
    deep.mkdir(parents=True)
    env = claude_with_plugin(kg_server, shm_dir)
    log = ask(env, deep, "How are checkout totals computed?", shm_dir / "subfolder.log")
    assert GIST in log, "the project's node is preloaded from its subfolder"
    assert not (kg_server.storage / "projects" / "billing").exists(), "no graph for the subfolder"


def test_a_session_in_a_git_worktree_preloads_the_main_checkouts_graph(kg_server, shm_dir):
    project = kg_server.make_project("app")
    (project / "src").mkdir()
    (project / "src" / "main.rs").write_text("fn main() {}\n")
    git(project, "init", "--quiet")
    git(project, "add", "-A")
    git(project, "commit", "--quiet", "-m", "first")
    git(project, "worktree", "add", "--quiet", "-b", "feature", "../app-feature")
    seed(kg_server, project)
    worktree = (project.parent / "app-feature").resolve()
    env = claude_with_plugin(kg_server, shm_dir)
    log = ask(env, worktree / "src", "How are checkout totals computed?", shm_dir / "worktree.log")
    assert GIST in log, "the main checkout's node is preloaded in the worktree"
    assert not (kg_server.storage / "projects" / "app-feature").exists()
