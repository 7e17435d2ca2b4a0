"""The real Gemini CLI (`@google/gemini-cli`, pinned in tests/package.json) against a real
kg-memory, wired by `kg-memory install gemini`.

Each test runs Gemini CLI with a temporary HOME under /dev/shm, in a project folder it
trusts (Gemini CLI runs no MCP server and no hook elsewhere). `gemini mcp list` runs
Gemini CLI's own connection check. Sessions run against a scripted stand-in for the
Gemini API (`scripted_gemini.py`) with a made-up key: no login, no network besides the
loopback, and the hooks fire as they would for a person.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import free_port
from kg_wiring import kg_memory, stop_holder, wait_for_holder
from scripted_gemini import ScriptedGemini, tool_names

TESTS_DIR = Path(__file__).resolve().parents[1]
GEMINI = TESTS_DIR / "node_modules" / ".bin" / "gemini"

pytestmark = pytest.mark.skipif(
    not GEMINI.exists(),
    reason=f"Gemini CLI not installed ({GEMINI} missing): run `cd tests && npm ci`",
)

CONNECTED = re.compile(r"kg: (\S+) \(http\) - Connected")


@dataclass
class Gemini:
    home: Path
    env: dict[str, str]

    @property
    def settings(self) -> Path:
        return self.home / ".gemini" / "settings.json"

    def trust(self, folder: Path) -> None:
        """Trust `folder` as a person would at Gemini CLI's first-run question."""
        path = self.home / ".gemini" / "trustedFolders.json"
        trusted = json.loads(path.read_text()) if path.exists() else {}
        trusted[str(folder)] = "TRUST_FOLDER"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(trusted))

    def run(self, *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 90):
        return subprocess.run(
            [str(GEMINI), *args],
            cwd=cwd,
            env=env or self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


@pytest.fixture
def gemini(shm_dir) -> Gemini:
    home = shm_dir / "gemini-home"
    home.mkdir()
    # A hermetic environment: no inherited Gemini/Google settings, keys or proxies.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GEMINI_", "GOOGLE_", "KG_", "NODE_OPTIONS", "CLAUDE"))
        and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
    }
    env.update(HOME=str(home), NO_COLOR="1", TERM="dumb", NO_PROXY="127.0.0.1,localhost", CI="1")
    return Gemini(home=home, env=env)


def install(kg_server, gemini: Gemini, *extra: str) -> subprocess.CompletedProcess:
    where = ("--port", str(kg_server.port), "--storage", str(kg_server.storage))
    done = kg_memory(*where, "install", "gemini", *extra, home=gemini.home)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def shown(listed: subprocess.CompletedProcess) -> str:
    """What `gemini mcp list` printed (it writes the list to stderr)."""
    return listed.stdout + listed.stderr


def kg_line(listed: subprocess.CompletedProcess) -> str:
    return next((l.strip() for l in shown(listed).splitlines() if "kg:" in l), "")


def test_installed_memory_is_connected_in_a_trusted_folder(kg_server, gemini):
    """`kg-memory install gemini` writes an entry Gemini CLI connects to; in a folder it
    does not trust, Gemini CLI lists it as disabled (as it does every server there)."""
    said = install(kg_server, gemini).stdout
    assert "gemini mcp list" in said and "trust" in said, said
    project = kg_server.make_project("gem")
    untrusted = gemini.run("mcp", "list", cwd=project)
    assert "Disabled" in kg_line(untrusted), shown(untrusted)
    # kg-memory status judges the folder's trust as Gemini CLI does.
    status = kg_memory("status", home=gemini.home, cwd=project).stdout
    assert f"Gemini CLI does not trust {project}" in status, status
    gemini.trust(project)
    listed = gemini.run("mcp", "list", cwd=project)
    line = kg_line(listed)
    assert CONNECTED.search(line) and kg_server.mcp_url in line, shown(listed)
    status = kg_memory("status", home=gemini.home, cwd=project).stdout
    assert f"Gemini CLI trusts {project}" in status and " ! " not in status, status


def test_install_and_uninstall_give_back_the_persons_settings_byte_for_byte(kg_server, gemini):
    """The person's settings (their own MCP server, hooks and choices, written by Gemini
    CLI itself) stay as they are; uninstall gives back the very bytes."""
    project = kg_server.make_project("own")
    gemini.trust(project)
    added = gemini.run("mcp", "add", "-s", "user", "--transport", "http", "docs", "http://127.0.0.1:9/docs", cwd=project)
    assert added.returncode == 0, added.stdout + added.stderr
    theirs = json.loads(gemini.settings.read_text())
    theirs["hooks"] = {"AfterAgent": [{"hooks": [{"type": "command", "command": "true"}]}]}
    theirs["ui"] = {"theme": "ANSI"}
    gemini.settings.write_text(json.dumps(theirs, indent=4))
    before = gemini.settings.read_bytes()

    install(kg_server, gemini)
    listed = gemini.run("mcp", "list", cwd=project)
    assert CONNECTED.search(kg_line(listed)), shown(listed)
    assert "docs:" in shown(listed), shown(listed)
    merged = json.loads(gemini.settings.read_text())
    assert merged["ui"] == {"theme": "ANSI"} and merged["hooks"]["AfterAgent"] == theirs["hooks"]["AfterAgent"]

    removed = kg_memory("uninstall", "gemini", home=gemini.home)
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert gemini.settings.read_bytes() == before
    listed = gemini.run("mcp", "list", cwd=project)
    assert kg_line(listed) == "" and "docs:" in shown(listed), shown(listed)


def test_an_entry_added_with_gemini_mcp_add_stays_the_persons(kg_server, gemini):
    """`gemini mcp add -s user --transport http kg <url>` writes what the installer writes.
    Pointing at this server, install keeps it (adding the hooks) and uninstall leaves it;
    pointing elsewhere, install stops and changes nothing."""
    project = kg_server.make_project("by-hand")
    gemini.trust(project)
    added = gemini.run("mcp", "add", "-s", "user", "--transport", "http", "kg", kg_server.mcp_url, cwd=project)
    assert added.returncode == 0, shown(added)
    by_hand = gemini.settings.read_bytes()
    said = install(kg_server, gemini).stdout
    assert 'keep the MCP server "kg" you added by hand' in said, said
    assert "SessionStart" in json.loads(gemini.settings.read_text())["hooks"]
    removed = kg_memory("uninstall", "gemini", home=gemini.home)
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert gemini.settings.read_bytes() == by_hand
    listed = gemini.run("mcp", "list", cwd=project)
    assert CONNECTED.search(kg_line(listed)), shown(listed)

    elsewhere = kg_memory("--port", "9", "install", "gemini", home=gemini.home)
    assert elsewhere.returncode == 1, elsewhere.stdout + elsewhere.stderr
    assert "added by hand" in elsewhere.stderr and "Nothing was changed" in elsewhere.stderr, elsewhere.stderr
    assert gemini.settings.read_bytes() == by_hand


def post(server, path: str, body: dict) -> dict:
    request = urllib.request.Request(
        f"{server.base_url}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=5) as r:
        return json.loads(r.read())


def test_hooks_bring_the_preload_prompt_recall_and_file_recall_to_the_model(kg_server, gemini):
    """A Gemini CLI session: the session-start hook's preload and the prompt hook's answer
    reach the model with the prompt, and reading a file the memory knows (with read_file,
    or `cat` in a shell) brings its node back with the file's content. The session is
    bound to the memory's session."""
    project = kg_server.make_project("radio")
    (project / "src").mkdir()
    source = project / "src" / "radio.c"
    source.write_text("void radio_init(void) {}\n")
    (project / "src" / "antenna.h").write_text("#define ANTENNA_GAIN 3\n")
    for node in (
        {"id": "radio-release-steps", "gist": "Releases go out by tagging vX.Y.Z; CI builds the firmware images"},
        {
            "id": "radio-init-order",
            "gist": "radio_init must run after the clock tree is up, or the PLL never locks",
            "touches": ["src/radio.c"],
        },
        {
            "id": "antenna-gain-units",
            "gist": "ANTENNA_GAIN is in dBi, not dB; the regulator's limit is 6 dBi",
            "touches": ["src/antenna.h"],
        },
    ):
        post(kg_server, "/api/nodes", {"level": "project", "project_path": str(project), **node})
    # Archived: the preload leaves it out, so only file recall can bring it.
    post(
        kg_server,
        "/api/view/step",
        {
            "level": "project",
            "project_path": str(project),
            "actions": [{"kind": "archive", "id": i} for i in ("radio-init-order", "antenna-gain-units")],
        },
    )
    # The person's choice of an API key (any key: the scripted model takes it).
    gemini.settings.parent.mkdir(parents=True, exist_ok=True)
    gemini.settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    install(kg_server, gemini)
    gemini.trust(project)
    script = [
        [{"name": "read_file", "args": {"file_path": str(source)}}],
        [{"name": "run_shell_command", "args": {"command": "cat antenna.h", "dir_path": "src"}}],
    ]
    with ScriptedGemini(script) as model:
        env = {**gemini.env, "GEMINI_API_KEY": "not-a-real-key", "GOOGLE_GEMINI_BASE_URL": model.base_url}
        done = gemini.run("-p", "How do releases work here?", "--yolo", cwd=project, env=env, timeout=120)
        info = f"{done.stdout}\n{done.stderr}\n" + json.dumps([r["path"] for r in model.requests])
        requests = model.main_requests()
        assert len(requests) >= 3, info
        first = json.dumps(requests[0]["contents"])
        assert "KG MEMORY PRELOADED" in first, first[:3000] + info
        assert "radio-release-steps" in first, first[:3000]
        assert "PLL never locks" not in first, first[:3000]
        # Each file's node comes back inside that tool's result, and only there.
        results = [
            json.dumps(part["functionResponse"])
            for content in requests[2]["contents"]
            for part in content.get("parts", [])
            if "functionResponse" in part
        ]
        assert len(results) == 2, results
        assert "radio_init(void)" in results[0], results
        assert "radio-init-order" in results[0] and "PLL never locks" in results[0], results
        assert "antenna-gain" not in results[0], results
        assert "ANTENNA_GAIN 3" in results[1], results
        assert "antenna-gain-units" in results[1] and "6 dBi" in results[1], results
        assert "PLL never locks" not in results[1], results
        # The prompt hook's answer arrives as a part of its own beside the prompt.
        parts = [p.get("text", "") for c in requests[0]["contents"] for p in c.get("parts", [])]
        prompt_context = [p for p in parts if p.startswith("<hook_context>") and "PRELOADED" not in p]
        assert prompt_context and prompt_context[0].startswith("<hook_context>KG "), parts
    sessions = json.loads((kg_server.storage / "sessions.json").read_text())
    bound = [r for r in sessions.values() if r.get("claude_sid")]
    assert len(bound) == 1 and bound[0]["project_path"] == str(project), sessions


def test_a_session_that_starts_without_its_server_tells_the_person(shm_dir, gemini):
    """No server runs: the session-start hook starts one and tells the person, on Gemini
    CLI's own channel, how to get memory in this session (/mcp reload)."""
    storage = shm_dir / "storage"
    port = free_port()
    project = gemini.home / "work"
    project.mkdir()
    gemini.settings.parent.mkdir(parents=True, exist_ok=True)
    gemini.settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    done = kg_memory("--port", str(port), "--storage", str(storage), "install", "gemini", home=gemini.home)
    assert done.returncode == 0, done.stdout + done.stderr
    gemini.trust(project)
    try:
        with ScriptedGemini([]) as model:
            env = {**gemini.env, "GEMINI_API_KEY": "not-a-real-key", "GOOGLE_GEMINI_BASE_URL": model.base_url}
            session = gemini.run("-p", "hello", cwd=project, env=env, timeout=120)
            said = shown(session)
            assert "KG Memory: no server was running" in said and "/mcp reload" in said, said
            assert "Claude" not in said, said
            assert "starting" in model.shown(), model.shown()[:2000]
        assert wait_for_holder(storage)["port"] == port
    finally:
        stop_holder(storage)


def test_a_lesson_written_through_gemini_clis_tools_lands_in_the_shared_memory(kg_server, gemini):
    """The model calls the memory's MCP tool through Gemini CLI's own MCP client (the
    session id taken from the preload, as the preload asks): the node is in the project
    graph every other agent reads."""
    project = kg_server.make_project("shared")
    gemini.settings.parent.mkdir(parents=True, exist_ok=True)
    gemini.settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    install(kg_server, gemini)
    gemini.trust(project)
    seen_tools: list[str] = []

    def write_lesson(body: dict) -> list[dict]:
        names = sorted(tool_names(body))
        seen_tools.extend(names)
        put = next((n for n in names if n.endswith("kg_put_node")), None)
        shown = json.dumps(body["contents"])
        sid = re.search(r"session_id: (\w+)", shown)
        if not (put and sid):
            return []
        return [
            {
                "name": put,
                "args": {
                    "session_id": sid.group(1),
                    "level": "project",
                    "id": "flash-erase-before-write",
                    "gist": "Flash pages must be erased before each write; a second write corrupts the page",
                },
            }
        ]

    with ScriptedGemini([write_lesson]) as model:
        env = {**gemini.env, "GEMINI_API_KEY": "not-a-real-key", "GOOGLE_GEMINI_BASE_URL": model.base_url}
        done = gemini.run("-p", "Remember how flash writes work.", "--yolo", cwd=project, env=env, timeout=120)
        info = f"{done.stdout}\n{done.stderr}\ntools: {seen_tools}"
    with urllib.request.urlopen(
        f"{kg_server.base_url}/api/nodes/project/flash-erase-before-write?project_path={project}", timeout=5
    ) as r:
        node = json.loads(r.read())
    assert "erased before each write" in json.dumps(node), f"{node}\n{info}"
