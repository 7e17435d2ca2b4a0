"""`kg-memory setup` with the real agents' CLIs (Claude Code, Codex and Gemini CLI, pinned in
tests/package.json) on PATH: it finds them, shows what it would change, asks (or takes --yes /
--only), and each agent's own listing then shows the memory; unknown agent names and a missing
terminal change nothing."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import server_binary
from kg_wiring import clean_env

TESTS_DIR = Path(__file__).resolve().parents[1]
BIN = TESTS_DIR / "node_modules" / ".bin"

pytestmark = pytest.mark.skipif(
    not all((BIN / agent).exists() for agent in ("claude", "codex", "gemini")),
    reason=f"agent CLIs not installed under {BIN}: run `cd tests && npm ci`",
)


def env_for(home: Path) -> dict[str, str]:
    env = clean_env(home)
    env = {
        k: v
        for k, v in env.items()
        if not k.startswith(("ANTHROPIC_", "CLAUDE", "OPENAI_", "CODEX_", "MCP_", "NODE_OPTIONS"))
    }
    env.update(
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        NO_COLOR="1",
        TERM="dumb",
        NO_PROXY="127.0.0.1,localhost",
    )
    return env


def run(args: list[str], home: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        args, env=env_for(home), cwd=home, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )


def kg(home: Path, server, *args: str) -> subprocess.CompletedProcess:
    where = ["--port", str(server.port), "--storage", str(server.storage)]
    return run([str(server_binary()), *where, *args], home)


def test_setup_finds_both_agents_and_connects_them(kg_server):
    home = kg_server.home
    (home / ".claude").mkdir(exist_ok=True)

    # No terminal and no --yes: the plan is shown, nothing is written.
    asked = kg(home, kg_server, "setup")
    assert asked.returncode != 0 and "--yes" in asked.stderr, asked.stdout + asked.stderr
    for found in ("Claude Code (claude at", "Codex CLI (codex at", "Gemini CLI (gemini at"):
        assert found in asked.stdout, asked.stdout
    assert "Claude Desktop" not in asked.stdout, "not installed here, so not offered"
    assert not (home / ".claude.json").exists() and not (home / ".codex" / "config.toml").exists()

    dry = kg(home, kg_server, "setup", "--dry-run")
    assert dry.returncode == 0 and "[mcp_servers.kg]" in dry.stdout and dry.stdout.count("(dry run: nothing was written") == 1, dry.stdout
    assert not (home / ".claude.json").exists()

    done = kg(home, kg_server, "setup", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    for agent in ("Claude Code", "Codex CLI", "Gemini CLI"):
        assert f"{agent}: connected." in done.stdout, done.stdout
    assert "/hooks" in done.stdout, "the step Codex needs from the person is named"

    claude = run([str(BIN / "claude"), "mcp", "list"], home)
    line = next((l for l in claude.stdout.splitlines() if l.startswith("kg: ")), "")
    assert kg_server.mcp_url.rstrip("/") in line and re.search(r"[✔✓] Connected", line), claude.stdout + claude.stderr
    codex = run([str(BIN / "codex"), "mcp", "list"], home)
    row = next((l.split() for l in codex.stdout.splitlines() if l.startswith("kg ")), [])
    assert row[1:2] == [kg_server.mcp_url] and row[-2:] == ["enabled", "Unsupported"], codex.stdout

    again = kg(home, kg_server, "setup", "--yes")
    assert again.returncode == 0 and again.stdout.count("already connected; nothing to change") == 3, again.stdout
    assert "Nothing to change." in again.stdout

    # What setup did, uninstall takes back out (Claude Code keeps its own state in
    # ~/.claude.json meanwhile, so the agents' listings are the judge).
    for agent in ("claude-code", "codex", "gemini"):
        undone = kg(home, kg_server, "uninstall", agent)
        assert undone.returncode == 0, undone.stdout + undone.stderr
    claude = run([str(BIN / "claude"), "mcp", "list"], home)
    assert not [l for l in claude.stdout.splitlines() if l.startswith("kg: ")], claude.stdout
    codex = run([str(BIN / "codex"), "mcp", "list"], home)
    assert not [l for l in codex.stdout.splitlines() if l.startswith("kg ")], codex.stdout
    assert not (home / ".gemini" / "settings.json").exists(), "setup created it, uninstall removed it"


def test_only_and_unknown_agent_names(kg_server):
    home = kg_server.home
    unknown = kg(home, kg_server, "setup", "--only", "codex,gemini-cli-typo")
    assert unknown.returncode != 0
    assert "possible values: claude-code, claude-desktop, codex, gemini" in unknown.stderr, unknown.stderr
    assert not (home / ".codex").exists(), "nothing was changed"

    only = kg(home, kg_server, "setup", "--yes", "--only", "codex")
    assert only.returncode == 0, only.stdout + only.stderr
    assert "Claude Code" not in only.stdout.split("Done.")[0], only.stdout
    assert (home / ".codex" / "hooks.json").exists() and not (home / ".claude.json").exists()

    # Claude Desktop named but not installed: said, and the exit code says it.
    desktop = kg(home, kg_server, "setup", "--yes", "--only", "claude-desktop")
    assert desktop.returncode != 0 and "install and start Claude Desktop once" in desktop.stdout, desktop.stdout
