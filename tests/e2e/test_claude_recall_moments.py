"""Memory at the moments the work needs it (issue 37), through the real Claude Code CLI
with the plugin installed from this repository.

Claude Code needs a model to call tools, so a scripted stand-in for the Anthropic API
(`scripted_model.py`) plays the model: it asks for a Read, an Edit, an MCP call, and
Claude Code runs those tools for real and fires its real hooks. What the memory said is
read where it matters: in what Claude Code showed the model next.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path

import pytest
from scripted_model import ScriptedModel
from test_claude_ambient import claude_with_plugin, post
from test_claude_plugin import CLAUDE, run

pytestmark = pytest.mark.skipif(
    not CLAUDE.exists(), reason=f"Claude Code CLI not installed ({CLAUDE} missing): run `cd tests && npm ci`"
)


def archive(server, project: Path, node_id: str) -> None:
    """Archive a node, so the session preload shows no gist of it."""
    post(
        server,
        "/api/view/step",
        {"level": "project", "project_path": str(project), "actions": [{"kind": "archive", "id": node_id}]},
    )


def session_with_model(
    env: dict[str, str], folder: Path, model: ScriptedModel, prompt: str, *tools: str, resume: list[str] = ()
):
    """Run `claude -p` in `folder` against the scripted model, allowing `tools`;
    `resume` adds `--session-id`/`--resume` arguments."""
    # Tool search off: every MCP tool is in the tool list the model sees, so the
    # scripted model can name it directly.
    env = dict(env, ANTHROPIC_BASE_URL=model.url, ANTHROPIC_API_KEY="sk-ant-scripted-test", ENABLE_TOOL_SEARCH="false")
    debug = Path(env["HOME"]).parent / f"claude-{len(model.requests)}-{id(model)}.log"
    try:
        done = run(env, folder, *resume, "--debug-file", str(debug), "-p", prompt, "--allowedTools", *tools, timeout=120)
    except subprocess.TimeoutExpired:
        tail = debug.read_text(errors="replace")[-4000:] if debug.exists() else "(no debug log)"
        pytest.fail(f"claude did not finish; its debug log ends:\n{tail}")
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def get(server, path: str) -> dict:
    with urllib.request.urlopen(f"{server.base_url}{path}", timeout=5) as r:
        return json.loads(r.read())


def test_reading_and_editing_a_touched_file_brings_its_memory_once(kg_server, shm_dir):
    project = kg_server.make_project("shop")
    (project / "src").mkdir()
    webhook = project / "src" / "webhook.rs"
    webhook.write_text("fn verify() {}\n")
    prices = project / "src" / "prices.rs"
    prices.write_text("const EUR: u32 = 100;\n")
    post(
        kg_server,
        "/api/nodes",
        {
            "level": "project",
            "project_path": str(project),
            "id": "billing-webhook-raw-body",
            "gist": "Verify Stripe signatures on the raw body: parsing JSON first breaks them",
            "touches": ["src/webhook.rs:1-20 (fn verify)"],
        },
    )
    archive(kg_server, project, "billing-webhook-raw-body")

    def note_on_prices(_body):
        # Between two turns, another session learns something about prices.rs.
        post(
            kg_server,
            "/api/nodes",
            {
                "level": "project",
                "project_path": str(project),
                "id": "billing-minor-units",
                "gist": "Amounts are integers in minor units; JPY has no minor unit",
                "touches": ["./src/prices.rs"],
            },
        )
        return [{"name": "Edit", "input": {"file_path": str(prices), "old_string": "100", "new_string": "101"}}]

    script = [
        [{"name": "Read", "input": {"file_path": str(webhook)}}],
        [{"name": "Read", "input": {"file_path": str(webhook)}}],
        [{"name": "Read", "input": {"file_path": str(prices)}}],
        note_on_prices,
    ]
    env = claude_with_plugin(kg_server, shm_dir)
    with ScriptedModel(script) as model:
        session_with_model(env, project, model, "check the webhook and bump the euro price", "Read", "Edit")
        seen = model.conversation_text()
    assert prices.read_text() == "const EUR: u32 = 101;\n", "the Edit ran for real"
    # Read: the archived node came back with the file, once for two reads.
    assert seen.count("Verify Stripe signatures on the raw body") == 1, seen[-3000:]
    assert seen.count("KG recall — memory about src/webhook.rs") == 1
    # Edit: the node written meanwhile came back with the edit.
    assert seen.count("Amounts are integers in minor units") == 1
    assert "KG recall — memory about src/prices.rs" in seen
    # And the decision log says why, each time.
    decisions = get(kg_server, f"/api/view/recall?project_path={project}")["decisions"]
    outcomes = [(d["tool"], d["outcome"]) for d in reversed(decisions) if d["trigger"] == "file"]
    assert outcomes == [("Read", "injected"), ("Read", "all_seen"), ("Read", "no_nodes"), ("Edit", "injected")]


def test_a_new_node_that_repeats_one_is_named_in_the_tool_result(kg_server, shm_dir):
    project = kg_server.make_project("cache")
    nodes = {
        "cache-invalidation-rule": "Cache entries expire after ten minutes and are cleared on deploy",
        "deploy-pipeline": "Deploys run through GitHub Actions, then an ECS rolling update",
        "db-pool-size": "PgBouncer pool is 40 connections per service",
        "auth-jwt-ttl": "Access JWTs live 15 minutes, refresh tokens 30 days",
        "billing-retries": "Stripe calls retry three times with idempotency keys",
        "search-index": "Meilisearch reindexes tickets nightly",
        "email-bounces": "Postmark bounces mark the contact as unreachable",
        "ws-idle": "The ALB closes idle WebSockets after 60 seconds",
        "s3-attachments": "Attachments go to S3 with presigned URLs valid 5 minutes",
        "otel-sampling": "Traces are sampled at 10 percent in production",
        "queue-visibility": "Jobs in the Postgres queue become visible again after 5 minutes",
    }
    for node_id, gist in nodes.items():
        post(kg_server, "/api/nodes", {"level": "project", "project_path": str(project), "id": node_id, "gist": gist})

    def put(node_id: str, gist: str):
        def call(body):
            sid = session_id_of(body)
            return [{"name": ScriptedModel.tool_named(body, "kg_put_node"),
                     "input": {"session_id": sid, "level": "project", "id": node_id, "gist": gist}}]
        return call

    script = [
        put("cache-expiry-deploy", "Cache entries expire after ten minutes; a deploy clears them"),
        put("Ws-idIe", "Idle sockets close"),
    ]
    env = claude_with_plugin(kg_server, shm_dir)
    with ScriptedModel(script) as model:
        session_with_model(env, project, model, "note what we learned about the cache", "mcp__plugin_knowledge-graph_kg__kg_put_node", "mcp__kg__kg_put_node")
        seen = model.conversation_text()
    assert not model.errors, model.errors
    assert "Possible duplicate: 'cache-invalidation-rule' already says" in seen, seen[-3000:]
    assert "Look-alike id: 'Ws-idIe' differs from the existing 'ws-idle'" in seen


def session_id_of(body: dict) -> str:
    """The KG session id the preload named in the conversation (`session_id: <id>`)."""
    text = json.dumps(body.get("messages", []))
    marker = "session_id: "
    at = text.index(marker) + len(marker)
    return text[at : at + 8]


def test_a_session_in_a_subfolder_or_a_worktree_reads_the_projects_graph(kg_server, shm_dir):
    project = kg_server.make_project("api")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", str(project)], check=True)
    (project / "src").mkdir()
    (project / "src" / "main.rs").write_text("fn main() {}\n")
    subprocess.run([*git, "-C", str(project), "add", "."], check=True)
    subprocess.run([*git, "-C", str(project), "commit", "-qm", "init"], check=True)
    worktree = project.parent / "api-feature"
    subprocess.run([*git, "-C", str(project), "worktree", "add", "-q", str(worktree)], check=True)
    post(
        kg_server,
        "/api/nodes",
        {"level": "project", "project_path": str(project), "id": "api-error-envelope",
         "gist": "Every API error answers {code, message, request_id}"},
    )
    env = claude_with_plugin(kg_server, shm_dir)
    for folder, name in [(project / "src", "subfolder"), (worktree / "src", "worktree")]:
        debug = shm_dir / f"{name}.log"
        run(env, folder, "--debug-file", str(debug), "-p", "what does an error look like?")
        log = debug.read_text(errors="replace")
        assert "api-error-envelope" in log, f"{name}: the project's node is in the preload"
    # No graph was made for the subfolder or the worktree.
    stored = sorted(p.name for p in (kg_server.storage / "projects").iterdir())
    assert stored == ["api"], stored


def test_a_stale_touch_is_counted_and_gits_rename_is_offered_and_taken(kg_server, shm_dir):
    project = kg_server.make_project("firmware")
    git = ["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "src").mkdir()
    (project / "src" / "radio.c").write_text("int radio_init(void) { return 0; }\n" * 20)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "radio driver"], check=True)
    post(
        kg_server,
        "/api/nodes",
        {"level": "project", "project_path": str(project), "id": "radio-init-order",
         "gist": "The radio must be initialised after the SPI bus, never before",
         "touches": ["src/radio.c:1-5 (radio_init)"]},
    )
    subprocess.run([*git, "mv", "src/radio.c", "src/sx1262.c"], check=True)
    subprocess.run([*git, "commit", "-qm", "name the driver after the chip"], check=True)

    def survey_row() -> dict:
        survey = get(kg_server, "/api/maintenance_debt")
        return next(g for g in survey["graphs"] if g.get("project_path") == str(project))

    # Counted in DEBT, with git's rename beside it.
    row = survey_row()
    assert row["debt"]["dangling_touches"] == 1, row
    assert row["stale_touches"] == [
        {"node": "radio-init-order", "touch": "src/radio.c:1-5 (radio_init)", "renamed_to": "src/sx1262.c"}
    ], row

    def fix(touch: str | None):
        def call(body):
            args = {"session_id": session_id_of(body)}
            if touch:
                args.update(id="radio-init-order", touch=touch)
            return [{"name": ScriptedModel.tool_named(body, "kg_fix_touch"), "input": args}]
        return call

    env = claude_with_plugin(kg_server, shm_dir)
    with ScriptedModel([fix(None), fix("src/radio.c:1-5 (radio_init)")]) as model:
        session_with_model(
            env, project, model, "tidy the memory's file pointers",
            "mcp__plugin_knowledge-graph_kg__kg_fix_touch",
        )
        seen = model.conversation_text()
    assert not model.errors, model.errors
    # Offered: the stale entry and git's new path for it.
    assert "src/radio.c" in seen and "src/sx1262.c" in seen, seen[-3000:]
    # Taken: the touch now names the renamed file, line range and symbol kept.
    node = get(kg_server, f"/api/nodes/project/radio-init-order?project_path={project}")
    touches = node.get("node", node).get("touches")
    assert touches == ["src/sx1262.c:1-5 (radio_init)"], node
    assert survey_row()["debt"].get("dangling_touches", 0) == 0


def test_a_write_in_one_session_reaches_the_others_next_prompt_once(kg_server, shm_dir):
    project = kg_server.make_project("ledger")
    (project / "src").mkdir()
    invoice = project / "src" / "invoice.rs"
    invoice.write_text("fn total() {}\n")
    post(
        kg_server,
        "/api/nodes",
        {"level": "project", "project_path": str(project), "id": "invoice-rounding",
         "gist": "Invoice totals round half-even per line, never on the sum", "touches": ["src/invoice.rs"]},
    )
    env = claude_with_plugin(kg_server, shm_dir)
    read_tools = ("Read",)
    put_tools = ("mcp__plugin_knowledge-graph_kg__kg_put_node", "mcp__kg__kg_put_node")
    b = "5e551011-0000-4000-8000-00000000000b"

    # B works on invoice rounding: it asks about it and reads the file.
    with ScriptedModel([[{"name": "Read", "input": {"file_path": str(invoice)}}]]) as model:
        session_with_model(env, project, model, "check how invoice rounding works", *read_tools, resume=["--session-id", b])

    # A, another Claude Code session, corrects that node, adds one on the same topic
    # and one on another.
    def put(node_id: str, gist: str):
        def call(body):
            return [{"name": ScriptedModel.tool_named(body, "kg_put_node"),
                     "input": {"session_id": session_id_of(body), "level": "project", "id": node_id, "gist": gist}}]
        return call

    script = [
        put("invoice-rounding", "Invoice totals round half-even per line; credit notes round the same way"),
        put("invoice-rounding-currencies", "Invoice rounding uses the currency's minor unit: JPY rounds to whole yen"),
        put("css-theme-tokens", "Colours come from CSS theme tokens, never literal hex values"),
    ]
    with ScriptedModel(script) as model:
        session_with_model(env, project, model, "record what we found", *put_tools)
        assert not model.errors, model.errors

    # B's next prompt hears of A's two writes on its topic, and not of the third.
    with ScriptedModel([]) as model:
        session_with_model(env, project, model, "go on", *read_tools, resume=["--resume", b])
        seen = model.conversation_text()
    header = "Meanwhile others wrote to this memory"
    assert seen.count(header) == 1, seen[-3000:]
    news = seen[seen.index(header):]
    assert "- invoice-rounding-currencies (new): Invoice rounding uses the currency" in news, news[:1500]
    assert "- invoice-rounding (updated): Invoice totals round half-even per line; credit notes" in news
    assert "css-theme-tokens" not in seen

    # Once: the prompt after that brings nothing new.
    with ScriptedModel([]) as model:
        session_with_model(env, project, model, "anything else?", *read_tools, resume=["--resume", b])
        again = model.conversation_text()
    assert again.count(header) == 1, "only the earlier turn's news is in the history"
    decisions = get(kg_server, f"/api/view/recall?project_path={project}")["decisions"]
    pushes = [d for d in decisions if d["trigger"] == "push"]
    assert [d["outcome"] for d in pushes][:1] == ["injected"], pushes
