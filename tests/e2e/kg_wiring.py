"""Helpers for the tests of how kg-memory is wired into Claude Code: run the binary with a
clean environment, read what a `claude -p` session recorded in its transcript, and find
(and stop) a server that a hook or the stdio bridge started on its own."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from conftest import server_binary

LOCK_FILE = ".kg-memory.lock"


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment without any KG_* knob or CLAUDE_CONFIG_DIR, with HOME and
    `extra` set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_") and k != "CLAUDE_CONFIG_DIR"}
    env.update(HOME=str(home), KG_AUTOCOMMIT_INTERVAL="0", **extra)
    return env


def kg_memory(*args: str, home: Path, cwd: Path | None = None, **extra: str) -> subprocess.CompletedProcess:
    """`kg-memory <args>` with HOME=`home` and no KG_* variable but `extra`."""
    return subprocess.run(
        [str(server_binary()), *args],
        env=clean_env(home, **extra),
        cwd=cwd or home,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def holder(storage: Path) -> dict | None:
    """The server holding `storage` (pid, host, port), from the root's lock file."""
    try:
        return json.loads((storage / LOCK_FILE).read_text().strip())
    except (OSError, ValueError):
        return None


def wait_for_holder(storage: Path, timeout: float = 20.0) -> dict:
    """Wait until a server holds `storage` and listens; its record."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = holder(storage)
        if record and listening(record["port"]):
            return record
        time.sleep(0.05)
    raise AssertionError(f"no server came up on {storage}")


def stop_holder(storage: Path, sig: int = signal.SIGTERM, timeout: float = 20.0) -> None:
    """Signal the server holding `storage` (one a hook or the bridge started) and wait
    until its port is free."""
    record = holder(storage)
    if not record:
        return
    try:
        os.kill(record["pid"], sig)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while listening(record["port"]) and time.monotonic() < deadline:
        time.sleep(0.05)


def transcript_hooks(claude_home: Path) -> list[dict]:
    """The hook attachments of the newest session transcript under `claude_home`:
    `hook_success` (one per command run, with its stdout), `hook_system_message`,
    `hook_additional_context` (what reached the model)."""
    files = sorted((claude_home / ".claude" / "projects").glob("*/*.jsonl"), key=lambda p: p.stat().st_mtime)
    assert files, f"no session transcript under {claude_home}"
    found = []
    for line in files[-1].read_text().splitlines():
        attachment = json.loads(line).get("attachment")
        if isinstance(attachment, dict) and attachment.get("type", "").startswith("hook"):
            found.append(attachment)
    return found


def context_of(attachments: list[dict], event: str) -> list[str]:
    """Every piece of additional context the model got from `event`'s hooks."""
    pieces: list[str] = []
    for a in attachments:
        if a["type"] == "hook_additional_context" and a.get("hookEvent") == event:
            content = a.get("content")
            pieces.extend(content if isinstance(content, list) else [content])
    return pieces
