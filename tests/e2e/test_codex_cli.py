"""The real Codex CLI (`@openai/codex`, pinned in tests/package.json) against a real kg-memory.

Codex needs no login for `codex mcp list` and for a session's first steps: `codex exec` starts
the thread (SessionStart hook), submits the prompt (UserPromptSubmit hook) and connects its MCP
servers before it asks a model anything. The model it would ask is a provider pointed at a closed
loopback port, so nothing leaves the machine; the run is stopped once the hooks have answered.
Codex runs only hooks the person trusted in `/hooks`; these runs pass
`--dangerously-bypass-hook-trust`, and one run without it shows that an untrusted hook is skipped.
Each run has its own HOME (Codex refuses to place its helpers under /tmp).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import urllib.request

import pytest
from conftest import free_port
from kg_wiring import kg_memory, stop_holder, wait_for_holder
from scripted_codex import ScriptedCodexModel

TESTS_DIR = Path(__file__).resolve().parents[1]
CODEX = TESTS_DIR / "node_modules" / ".bin" / "codex"

pytestmark = pytest.mark.skipif(
    not CODEX.exists(),
    reason=f"Codex CLI not installed ({CODEX} missing): run `cd tests && npm ci`",
)

# A model provider nobody answers for: Codex gets as far as its first model request.
NO_MODEL = [
    "-c",
    "model_provider=nowhere",
    "-c",
    'model_providers.nowhere={name="nowhere",base_url="http://127.0.0.1:9/v1",wire_api="responses",'
    "request_max_retries=0,stream_max_retries=0}",
]


@dataclass
class Codex:
    home: Path
    project: Path
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(CODEX), *args],
            cwd=self.project,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def listed(self) -> dict[str, list[str]]:
        """`codex mcp list` as {name: [the row's other columns]} (HTTP servers: url, bearer env,
        status, auth); one table per transport, each with its header row."""
        out = self.run("mcp", "list")
        assert out.returncode == 0, out.stdout + out.stderr
        rows = [line.split() for line in out.stdout.splitlines() if line.strip() and not line.startswith("Name ")]
        return {row[0]: row[1:] for row in rows}

    def exec(self, prompt: str, *flags: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """`codex exec` to its end (a scripted model answers)."""
        return self.run("exec", "--skip-git-repo-check", *flags, prompt, timeout=timeout)

    def session(self, prompt: str, *flags: str, until: str | None, timeout: float = 40) -> str:
        """Run `codex exec` until its output shows `until` (then stop it), or for `timeout`
        seconds; answers what it printed."""
        out = self.home / f"codex-exec-{time.monotonic_ns()}.log"
        with out.open("w") as sink:
            proc = subprocess.Popen(
                [str(CODEX), "exec", "--skip-git-repo-check", *NO_MODEL, *flags, prompt],
                cwd=self.project,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline and proc.poll() is None:
                if until is not None and until in out.read_text(errors="replace"):
                    break
                time.sleep(0.1)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        printed = out.read_text(errors="replace")
        return printed

    def rollouts(self) -> list[Path]:
        return sorted((self.home / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl"))


@pytest.fixture
def codex(kg_server) -> Codex:
    # The server's own HOME: projects under it are projects of this memory.
    home = kg_server.home
    project = kg_server.make_project("codex-work")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "CODEX_", "KG_", "NODE_OPTIONS"))
        and k not in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")
    }
    env.update(HOME=str(home), NO_COLOR="1", TERM="dumb", NO_PROXY="127.0.0.1,localhost")
    return Codex(home=home, project=project, env=env)


def install(codex: Codex, kg_server, *args: str) -> subprocess.CompletedProcess:
    where = ("--port", str(kg_server.port), "--storage", str(kg_server.storage))
    done = kg_memory(*where, *args, home=codex.home, cwd=codex.project)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_install_codex_connects_the_memory_and_its_hooks_preload_it(kg_server, codex):
    """After `kg-memory install codex`, Codex's own listing reaches the server, and a session
    gets the preload from its SessionStart hook, bound to Codex's session id, with the
    memory's tools offered and our instructions read."""
    said = install(codex, kg_server, "install", "codex").stdout
    assert "/hooks" in said, said
    row = codex.listed().get("kg")
    assert row is not None and row[0] == kg_server.mcp_url and row[2] == "enabled", row
    # Codex asked the server how it authenticates: "Unknown" would mean nobody answered.
    assert row[3] == "Unsupported", row

    printed = codex.session(
        "How do releases work here?", "--dangerously-bypass-hook-trust", until="hook: UserPromptSubmit Completed"
    )
    assert "hook: SessionStart Completed" in printed, printed
    assert "hook: UserPromptSubmit Completed" in printed, printed
    sessions = json.loads((kg_server.storage / "sessions.json").read_text())
    bound = [r for r in sessions.values() if r.get("claude_sid")]
    assert len(bound) == 1 and bound[0]["project_path"] == str(codex.project), f"{sessions}\n{printed}"
    rollout = codex.rollouts()[-1]
    assert bound[0]["claude_sid"] in rollout.name, (bound, rollout)
    records = [json.loads(line) for line in rollout.read_text().splitlines() if line.strip()]
    developer = [
        c.get("text", "")
        for r in records
        if r.get("type") == "response_item" and r["payload"].get("role") == "developer"
        for c in r["payload"].get("content", [])
    ]
    preload = [t for t in developer if t.startswith("KG MEMORY PRELOADED")]
    assert preload, printed
    assert len(preload[0].encode()) <= 9_000, "a Codex preload fits Codex's budget in bytes"
    text = rollout.read_text()
    assert "mcp__kg" in text, "Codex offers the memory's tools"
    assert "kg-memory: begin" in text, "Codex read our instructions from its AGENTS.md"


def test_an_untrusted_hook_is_skipped_and_listing_says_when_nobody_answers(kg_server, codex, kg_server_factory):
    """What the closing words warn of: without the person's trust Codex runs none of our
    hooks (no session is bound); and the listing tells a server that answers from none."""
    install(codex, kg_server, "install", "codex")
    printed = codex.session("hello", until=None, timeout=12)
    assert "hook: SessionStart" not in printed, printed
    sessions_file = kg_server.storage / "sessions.json"
    sessions = json.loads(sessions_file.read_text()) if sessions_file.exists() else {}
    assert not [r for r in sessions.values() if r.get("claude_sid")], sessions

    elsewhere = free_port()
    done = kg_memory("--port", str(elsewhere), "--storage", str(kg_server.storage), "uninstall", "codex", home=codex.home)
    assert done.returncode == 0, done.stdout + done.stderr
    install_nowhere = kg_memory("--port", str(elsewhere), "install", "codex", home=codex.home)
    assert install_nowhere.returncode == 0, install_nowhere.stdout + install_nowhere.stderr
    assert codex.listed()["kg"][3] == "Unknown"


def test_install_and_uninstall_restore_codexs_files_byte_for_byte(kg_server, codex):
    """The person's config.toml (comments, layout, other servers) and AGENTS.md come back
    exactly; files install created are gone; `codex mcp list` no longer shows the memory."""
    dot = codex.home / ".codex"
    dot.mkdir(parents=True, exist_ok=True)
    config = '# my Codex\nmodel = "gpt-5"   # the usual\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\nargs = ["--fast"]\n'
    agents = "# House rules\n\nTabs, always.\n"
    (dot / "config.toml").write_text(config)
    (dot / "AGENTS.md").write_text(agents)

    dry = install(codex, kg_server, "install", "codex", "--dry-run").stdout
    assert "[mcp_servers.kg]" in dry and "hooks.json" in dry, dry
    assert (dot / "config.toml").read_text() == config and not (dot / "hooks.json").exists()

    install(codex, kg_server, "install", "codex")
    assert set(codex.listed()) == {"docs", "kg"}
    hooks = json.loads((dot / "hooks.json").read_text())["hooks"]
    assert sorted(hooks) == ["PostToolUse", "SessionStart", "UserPromptSubmit"], hooks
    assert hooks["PostToolUse"][0]["matcher"] == "Bash|apply_patch"
    assert list(dot.glob("config.toml.bak-kg-*")), "the person's file was backed up"
    # A second install changes nothing.
    again = install(codex, kg_server, "install", "codex")
    assert "add" not in again.stdout.split("Done.")[0], again.stdout

    undo = install(codex, kg_server, "uninstall", "codex")
    assert "remove" in undo.stdout, undo.stdout
    assert (dot / "config.toml").read_bytes() == config.encode()
    assert (dot / "AGENTS.md").read_bytes() == agents.encode()
    assert not (dot / "hooks.json").exists()
    assert set(codex.listed()) == {"docs"}


def test_a_damaged_config_is_left_untouched_with_a_clear_error(kg_server, codex):
    dot = codex.home / ".codex"
    dot.mkdir(parents=True, exist_ok=True)
    (dot / "config.toml").write_text("model = [unclosed\n")
    done = kg_memory("--port", str(kg_server.port), "install", "codex", home=codex.home)
    assert done.returncode != 0
    assert "not valid TOML" in done.stderr and "nothing was changed" in done.stderr, done.stderr
    assert (dot / "config.toml").read_text() == "model = [unclosed\n"
    assert not (dot / "hooks.json").exists() and not (dot / "AGENTS.md").exists()


def post(server, path: str, body: dict) -> dict:
    request = urllib.request.Request(
        f"{server.base_url}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=5) as r:
        return json.loads(r.read())


def test_a_patch_and_a_shell_read_bring_back_what_the_memory_knows_of_those_files(kg_server, codex):
    """With a scripted model, Codex really runs `apply_patch` and a shell `cat`; its
    PostToolUse hook hands each to file recall, and the archived node about the patched
    file, then the one about the file read, reach the model after the call."""
    project = codex.project
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("TIMEOUT = 5\n")
    (project / "NOTES.md").write_text("release on fridays\n")
    for node in (
        {"id": "deploy-by-tag", "gist": "Deploys go out by pushing a vX.Y.Z tag; CI does the rest"},
        {"id": "app-timeout-origin", "gist": "TIMEOUT is 5 s because the payment gateway drops idle sockets at 6 s", "touches": ["src/app.py"]},
        {"id": "notes-release-day", "gist": "Fridays are release days only when the on-call rota is full", "touches": ["NOTES.md"]},
    ):
        post(kg_server, "/api/nodes", {"level": "project", "project_path": str(project), **node})
    # Archived: the preload leaves them out, so only file recall can bring them.
    post(
        kg_server,
        "/api/view/step",
        {
            "level": "project",
            "project_path": str(project),
            "actions": [{"kind": "archive", "id": i} for i in ("app-timeout-origin", "notes-release-day")],
        },
    )
    install(codex, kg_server, "install", "codex")
    patch = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-TIMEOUT = 5\n+TIMEOUT = 4\n*** End Patch\n"
    script = [
        f"await tools.apply_patch({json.dumps(patch)}); text('patched');",
        'const r = await tools.exec_command({cmd: "cat NOTES.md"}); text(JSON.stringify(r));',
    ]
    with ScriptedCodexModel(script) as model:
        done = codex.exec(
            "Shorten the timeout",
            "--dangerously-bypass-hook-trust",
            "--dangerously-bypass-approvals-and-sandbox",
            *model.provider_flags(),
        )
        info = f"{done.stdout}\n{done.stderr}"
        assert (project / "src" / "app.py").read_text() == "TIMEOUT = 4\n", info
        shown = [json.dumps(r["body"].get("input", [])) for r in model.requests]
    assert len(shown) >= 3, info
    assert "KG MEMORY PRELOADED" in shown[0] and "gateway drops idle sockets" not in shown[0], info
    # After the patch: the patched file's node; after the read: the read file's node.
    assert "app-timeout-origin" in shown[1] and "gateway drops idle sockets" in shown[1], shown[1][-4000:] + info
    assert "on-call rota is full" not in shown[1]
    assert "notes-release-day" in shown[2] and "on-call rota is full" in shown[2], shown[2][-4000:] + info


def test_a_session_that_starts_without_its_server_tells_the_person(shm_dir, codex):
    """No server runs: the session-start hook starts one and tells the person, in Codex's
    terms, how to get memory in this session (`codex resume --last`)."""
    storage = shm_dir / "storage"
    port = free_port()
    done = kg_memory("--port", str(port), "--storage", str(storage), "install", "codex", home=codex.home)
    assert done.returncode == 0, done.stdout + done.stderr
    try:
        printed = codex.session(
            "hello", "--dangerously-bypass-hook-trust", until="hook: UserPromptSubmit Completed"
        )
        assert "hook: SessionStart Completed" in printed, printed
        # `codex exec` prints no hook's systemMessage (the TUI does); the model's part of
        # the answer is in the session's record, in Codex's terms.
        text = codex.rollouts()[-1].read_text()
        assert "KG memory server is starting" in text and "codex resume --last" in text, printed
        assert "/mcp" not in text, "Claude Code's menu means nothing in Codex"
        record = wait_for_holder(storage)
        assert record["port"] == port, record
    finally:
        stop_holder(storage)


def test_without_trusted_hooks_the_tools_still_work_and_say_how_to_get_the_hooks(kg_server, codex):
    """Hooks not trusted: Codex runs none of them, but its model reaches the memory through
    the MCP tools; the first kg_read names the step that turns the hooks on."""
    project = codex.project
    post(kg_server, "/api/nodes", {"level": "project", "project_path": str(project), "id": "deploy-by-tag", "gist": "Deploys go out by pushing a vX.Y.Z tag; CI does the rest"})
    install(codex, kg_server, "install", "codex")
    script = [f"const r = await tools.mcp__kg__kg_read({{cwd: {json.dumps(str(project))}}}); text(JSON.stringify(r));"]
    with ScriptedCodexModel(script) as model:
        done = codex.exec("How do deploys work?", "--dangerously-bypass-approvals-and-sandbox", *model.provider_flags())
        info = f"{done.stdout}\n{done.stderr}"
        assert "hook: SessionStart" not in info, info
        assert len(model.requests) >= 2, info
        answer = json.dumps(model.requests[1]["body"].get("input", []))
    assert "Deploys go out by pushing a vX.Y.Z tag" in answer, answer[-3000:] + info
    assert "KG Memory's hooks did not run" in answer and "/hooks" in answer, answer[-3000:]


def app_server(codex: Codex, *requests: dict) -> dict[int, dict]:
    """Codex's own app-server (what its /hooks screen uses): the answers by request id."""
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"clientInfo": {"name": "kg-e2e", "version": "0"}}}]
    lines.append({"jsonrpc": "2.0", "method": "initialized"})
    lines.extend(requests)
    proc = subprocess.Popen(
        [str(CODEX), "app-server"],
        cwd=codex.project,
        env=codex.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    for line in lines:
        proc.stdin.write(json.dumps(line) + "\n")
    proc.stdin.flush()
    wanted = {r["id"] for r in requests if "id" in r}
    answers: dict[int, dict] = {}
    deadline = time.monotonic() + 20
    try:
        while wanted - answers.keys() and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            message = json.loads(line)
            if message.get("id") in wanted:
                answers[message["id"]] = message
    finally:
        proc.kill()
        proc.wait()
    return answers


def test_hooks_the_person_trusted_run_and_uninstall_forgets_the_trust(kg_server, codex):
    """The person trusts the hooks (as /hooks does, through Codex's app-server): doctor
    says so, a session runs them without any bypass, and uninstall takes Codex's trust
    records of them out again, leaving config.toml as it was."""
    dot = codex.home / ".codex"
    dot.mkdir(parents=True, exist_ok=True)
    config = '# mine\nmodel = "gpt-5"\n'
    (dot / "config.toml").write_text(config)
    install(codex, kg_server, "install", "codex")
    listed = app_server(codex, {"jsonrpc": "2.0", "id": 1, "method": "hooks/list", "params": {"cwds": [str(codex.project)]}})
    hooks = [h for entry in listed[1]["result"]["data"] for h in entry["hooks"] if "kg-memory hook" in h["command"]]
    assert len(hooks) == 3 and {h["trustStatus"] for h in hooks} == {"untrusted"}, hooks
    where = ("--port", str(kg_server.port), "--storage", str(kg_server.storage))
    env = {"PATH": f"{CODEX.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    doctor = kg_memory(*where, "doctor", home=codex.home, cwd=codex.project, **env)
    assert "Codex does not run 3 of the 3 KG Memory hooks" in doctor.stdout, doctor.stdout

    edits = [
        {"keyPath": f'hooks.state."{h["key"]}".trusted_hash', "value": h["currentHash"], "mergeStrategy": "replace"}
        for h in hooks
    ]
    wrote = app_server(codex, {"jsonrpc": "2.0", "id": 2, "method": "config/batchWrite", "params": {"edits": edits}})
    assert wrote[2].get("result", {}).get("status") == "ok", wrote
    doctor = kg_memory(*where, "doctor", home=codex.home, cwd=codex.project, **env)
    assert "ok    Codex trusts the KG Memory hooks" in doctor.stdout, doctor.stdout

    printed = codex.session("hello", until="hook: UserPromptSubmit Completed")
    assert "hook: SessionStart Completed" in printed, printed

    install(codex, kg_server, "uninstall", "codex")
    assert (dot / "config.toml").read_text() == config
