"""The MCP tools, driven through the official Python `mcp` SDK's streamable HTTP client
against a real `kg-memory serve` (one fresh server per test).

Exact texts are asserted where interfaces.md §3 and core.md §7.10–7.11 pin them; for our own
prose (nudges, notes, hints) only the markers are asserted.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_client import RECALL_PHRASE, SESSION_FOOTER, Kg, connect

pytestmark = pytest.mark.anyio

TOOL_NAMES = [
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

REQUIRED = {
    "kg_read": [],
    "kg_search": ["query"],
    "kg_put_node": ["session_id", "level", "id", "gist"],
    "kg_rename_node": ["session_id", "old_id", "new_id"],
    "kg_put_edge": ["session_id", "level", "from", "to", "rel"],
    "kg_delete_node": ["session_id", "id"],
    "kg_delete_edge": ["session_id", "from", "to", "rel"],
    "kg_useful": ["session_id", "ids"],
    "kg_sync": ["session_id"],
    "kg_progress": ["session_id", "task_id"],
    "kg_fix_touch": ["session_id"],
}

NODE_ID_TAIL = ": use letters, digits, '.', '_', '-' (max 128 chars, must start alphanumeric)"
REL_TAIL = ": use letters, digits, '.', '_', '-' (max 64 chars, must start alphanumeric)"
REF_TAIL = ": use letters, digits, '.', '_', '-', '/', '~' (max 256 chars)"


@pytest.fixture
def server(kg_server):
    return kg_server


# --------------------------------------------------------------------------- transport


def test_transport_is_stateless_json(server):
    """Raw HTTP: initialize answers JSON without Mcp-Session-Id; GET / is 405; /health shape."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "e2e", "version": "0"},
            },
        }
    ).encode()
    req = urllib.request.Request(
        server.mcp_url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
    )
    with urllib.request.urlopen(req, timeout=5) as r:
        assert r.status == 200
        assert r.headers.get_content_type() == "application/json"
        assert r.headers.get("mcp-session-id") is None
        reply = json.loads(r.read())
    assert reply["result"]["serverInfo"]["name"] == "knowledge-graph-mcp"
    assert "instructions" not in reply["result"] or reply["result"]["instructions"] is None

    get = urllib.request.Request(server.mcp_url, method="GET", headers={"Accept": "text/event-stream"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(get, timeout=5)
    assert e.value.code == 405

    health = server.health()
    assert health["status"] == "ok"
    assert health["transport"] == "streamable-http"
    assert set(health) >= {"status", "version", "transport", "active_sessions", "loaded_graphs"}


# --------------------------------------------------------------------------- initialize + list


async def test_initialize_and_list_tools(server):
    async with streamable_http_client(server.mcp_url) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "knowledge-graph-mcp"
            assert init.server_info.version, "serverInfo.version must report our version"
            assert init.capabilities.tools is not None
            assert init.capabilities.resources is None and init.capabilities.prompts is None
            assert not init.instructions

            listed = await session.list_tools()
    names = [t.name for t in listed.tools]
    assert names == TOOL_NAMES
    for tool in listed.tools:
        schema = tool.input_schema
        assert tool.description and len(tool.description) > 20, f"{tool.name}: missing description"
        assert schema["type"] == "object", tool.name
        assert sorted(schema.get("required", [])) == sorted(REQUIRED[tool.name]), tool.name
        for key in REQUIRED[tool.name]:
            assert key in schema["properties"], f"{tool.name}: required {key} has no property"
        for key, prop in schema["properties"].items():
            if key == "level":
                assert prop["enum"] == ["user", "project"], tool.name
    props = {t.name: t.input_schema["properties"] for t in listed.tools}
    assert set(props["kg_read"]) == {"cwd", "session_id", "id", "ids", "level", "more"}
    assert props["kg_read"]["more"] == {"type": "boolean"}
    assert props["kg_read"]["ids"] == {"type": "array", "items": {"type": "string"}}
    assert set(props["kg_put_node"]) == {"session_id", "level", "id", "gist", "notes", "touches"}
    assert set(props["kg_put_edge"]) == {"session_id", "level", "from", "to", "rel", "notes"}
    assert props["kg_progress"]["state"]["type"] == "object"
    assert "level" in props["kg_progress"]


# --------------------------------------------------------------------------- kg_read (full) and session


async def test_kg_read_full_and_session_resolution(server):
    project = server.make_project("alpha")
    async with connect(server.mcp_url) as s:
        kg = Kg(s)
        first = await kg.ok("kg_read", {"cwd": str(project)})
        m = SESSION_FOOTER.search(first)
        assert m, first
        sid = m.group(1)
        assert "=== USER GRAPH — 0 active, 0 archived ===" in first
        assert "=== PROJECT GRAPH — 0 active, 0 archived ===" in first
        assert "HEALTH:" in first
        # First full read: Session footer, blank line, then the closing line with the recall phrase.
        head, _, tail = first.partition(f"\n\nSession: {sid}")
        assert tail.startswith("\n\n"), repr(tail)
        closing = tail[2:]
        assert "\n" not in closing.strip(), f"one closing line expected, got {closing!r}"
        assert RECALL_PHRASE in closing

        # Reusing the session: same id, op count, and no closing line any more.
        second = await kg.ok("kg_read", {"session_id": sid})
        assert second.endswith(f"\n\nSession: {sid}"), second[-200:]
        assert RECALL_PHRASE not in second
        # A valid session wins over cwd.
        third = await kg.ok("kg_read", {"session_id": sid, "cwd": str(server.make_project("beta"))})
        assert third.endswith(f"\n\nSession: {sid}")

        # No cwd and no session: a domain error that names cwd.
        text = await kg.err("kg_read", {})
        assert text.startswith("Error: ")
        assert "cwd" in text
        # An unknown session id without cwd is the same error.
        text = await kg.err("kg_read", {"session_id": "0badf00d"})
        assert text.startswith("Error: ") and "cwd" in text

        # A path-less (unknown) session id plus cwd mints a fresh session.
        fresh = await kg.ok("kg_read", {"session_id": "0badf00d", "cwd": str(project)})
        fresh_sid = SESSION_FOOTER.search(fresh).group(1)
        assert fresh_sid not in (sid, "0badf00d")
        assert RECALL_PHRASE in fresh  # that new session's first full read

        # cwd outside HOME: the caller's error, naming the resolved path and how to
        # allow such folders.
        outside = server.root / "elsewhere"
        outside.mkdir()
        text = await kg.err("kg_read", {"cwd": str(outside)})
        assert text.startswith(f"Error: Project path must be within home directory: {outside} (")
        assert "KG_PROJECT_ROOTS" in text


# --------------------------------------------------------------------------- kg_put_node


async def test_kg_put_node_and_validation(server):
    project = server.make_project()
    async with connect(server.mcp_url) as s:
        kg = Kg(s)
        sid = await kg.start(project)

        assert await kg.ok(
            "kg_put_node", {"session_id": sid, "level": "user", "id": "style.tabs", "gist": "Use tabs"}
        ) == "Node 'style.tabs' saved to user graph"
        assert await kg.ok(
            "kg_put_node",
            {
                "session_id": sid,
                "level": "project",
                "id": "build-cmd",
                "gist": "cargo build -p kg-server",
                "notes": ["debug build is enough"],
                "touches": ["Cargo.toml"],
            },
        ) == "Node 'build-cmd' saved to project graph"
        # Extra keys are allowed by the schema.
        assert await kg.ok(
            "kg_put_node",
            {"session_id": sid, "level": "user", "id": "x1", "gist": "g", "unexpected": True},
        ) == "Node 'x1' saved to user graph"

        # Oversized gist: saved anyway, with advice naming its length and the 300-char limit.
        big = "word " * 70  # 350 chars
        text = await kg.ok("kg_put_node", {"session_id": sid, "level": "user", "id": "big", "gist": big})
        assert text.startswith("Node 'big' saved to user graph")
        advice = text[len("Node 'big' saved to user graph") :]
        assert "350" in advice and "300" in advice, text
        # A gist of exactly 300 chars gets no advice.
        assert await kg.ok(
            "kg_put_node", {"session_id": sid, "level": "user", "id": "ok300", "gist": "a" * 300}
        ) == "Node 'ok300' saved to user graph"

        # Domain error: invalid id (exact message, isError set by our server).
        text = await kg.err("kg_put_node", {"session_id": sid, "level": "user", "id": "bad id!", "gist": "g"})
        assert text == "Error: Invalid node id 'bad id!'" + NODE_ID_TAIL
        text = await kg.err("kg_put_node", {"session_id": sid, "level": "user", "id": "it's", "gist": "g"})
        assert text == "Error: Invalid node id \"it's\"" + NODE_ID_TAIL
        text = await kg.err("kg_put_node", {"session_id": sid, "level": "user", "id": "-dash", "gist": "g"})
        assert text == "Error: Invalid node id '-dash'" + NODE_ID_TAIL
        # The id is checked before the level/graph is resolved.
        text = await kg.err("kg_put_node", {"session_id": "pathless", "level": "project", "id": "a b", "gist": "g"})
        assert text == "Error: Invalid node id 'a b'" + NODE_ID_TAIL

        # Schema validation, jsonschema wording.
        text = await kg.err("kg_put_node", {"session_id": sid, "level": "user", "id": "n"})
        assert text == "Input validation error: 'gist' is a required property"
        text = await kg.err("kg_put_node", {})
        assert text == "Input validation error: 'session_id' is a required property"
        text = await kg.err("kg_put_node", {"session_id": sid, "level": "user", "id": "n", "gist": 5})
        assert text == "Input validation error: 5 is not of type 'string'"
        text = await kg.err("kg_put_node", {"session_id": sid, "level": "user", "id": "n", "gist": "g", "notes": "n"})
        assert text == "Input validation error: 'n' is not of type 'array'"
        text = await kg.err("kg_put_node", {"session_id": sid, "level": "global", "id": "n", "gist": "g"})
        assert text == "Input validation error: 'global' is not one of ['user', 'project']"

        # Project write from a session registered without a project path.
        request = urllib.request.Request(f"{server.base_url}/api/sessions/register", method="POST")
        with urllib.request.urlopen(request, timeout=5) as answer:
            pathless = json.loads(answer.read())["session_id"]
        text = await kg.err("kg_put_node", {"session_id": pathless, "level": "project", "id": "n", "gist": "g"})
        assert text == f"Internal error: Session {pathless} has no project_path registered"
        # An id the server never handed out is refused, and says how to get one.
        text = await kg.err("kg_put_node", {"session_id": "deadbeef", "level": "project", "id": "n", "gist": "g"})
        assert text.startswith("Error: Unknown session: deadbeef.") and "kg_read(cwd=" in text
        # An empty session id is refused too (its exact text: test_empty_session_id_is_no_session).
        text = await kg.err("kg_put_node", {"session_id": "", "level": "project", "id": "n", "gist": "g"})
        assert text.startswith("Internal error: "), text

        # Update: gist replaced, notes/touches kept when omitted.
        assert await kg.ok(
            "kg_put_node", {"session_id": sid, "level": "project", "id": "build-cmd", "gist": "cargo build"}
        ) == "Node 'build-cmd' saved to project graph"
        block = await kg.ok("kg_read", {"session_id": sid, "id": "build-cmd"})
        assert block == (
            "▸ build-cmd (project, active)\n"
            "  gist: cargo build\n"
            "  notes:\n"
            "    - debug build is enough\n"
            "  touches: Cargo.toml"
            f"\n\nSession: {sid}"
        )


async def test_empty_session_id_is_no_session(server):
    async with connect(server.mcp_url) as s:
        kg = Kg(s)
        text = await kg.err("kg_put_node", {"session_id": "", "level": "project", "id": "n", "gist": "g"})
        assert text == "Internal error: session_id required for project-level operations"
    # ...and no "" session was created.
    health = server.health()
    assert health["active_sessions"] == 0, health


# --------------------------------------------------------------------------- kg_put_edge + kg_read ids


async def test_kg_put_edge_and_read_ids(server):
    project = server.make_project()
    async with connect(server.mcp_url) as s:
        kg = Kg(s)
        sid = await kg.start(project)
        for node, gist in [("ingest-queue", "Queue of raw events"), ("retry-policy", "3 retries, 2s base")]:
            await kg.ok("kg_put_node", {"session_id": sid, "level": "project", "id": node, "gist": gist})
        await kg.ok(
            "kg_put_node",
            {
                "session_id": sid,
                "level": "project",
                "id": "retry-policy",
                "gist": "3 retries, exponential 2s base, then dead-letter",
                "notes": ["Chosen after the March outage", "Base delay lives in config"],
                "touches": ["src/retry.rs", "config/app.toml"],
            },
        )

        assert await kg.ok(
            "kg_put_edge",
            {"session_id": sid, "level": "project", "from": "ingest-queue", "to": "retry-policy", "rel": "governed-by"},
        ) == "Edge ingest-queue->retry-policy:governed-by saved to project graph"
        assert await kg.ok(
            "kg_put_edge",
            {
                "session_id": sid,
                "level": "project",
                "from": "retry-policy",
                "to": "src/retry.rs",
                "rel": "implemented-in",
                "notes": ["see fn backoff"],
            },
        ) == "Edge retry-policy->src/retry.rs:implemented-in saved to project graph"

        # Identifier errors: from, then to, then rel, all before the level is resolved.
        base = {"session_id": sid, "level": "project", "from": "a", "to": "b", "rel": "r"}
        text = await kg.err("kg_put_edge", {**base, "rel": "bad rel"})
        assert text == "Error: Invalid rel 'bad rel'" + REL_TAIL
        text = await kg.err("kg_put_edge", {**base, "from": "a b", "rel": "bad rel"})
        assert text == "Error: Invalid edge ref 'a b'" + REF_TAIL
        text = await kg.err("kg_put_edge", {**base, "to": "x|y"})
        assert text == "Error: Invalid edge ref 'x|y'" + REF_TAIL
        text = await kg.err("kg_put_edge", {**base, "session_id": "feedf00d", "rel": "bad rel"})
        assert text == "Error: Invalid rel 'bad rel'" + REL_TAIL
        # An unknown session id is refused with how to get one (the reference created
        # it and then failed with "Internal error: Session … has no project_path").
        text = await kg.err("kg_put_edge", {**base, "session_id": "feedf00d"})
        assert text.startswith("Error: Unknown session: feedf00d.") and "kg_read(cwd=" in text
        text = await kg.err("kg_put_edge", {"session_id": sid, "level": "user", "from": "a", "to": "b"})
        assert text == "Input validation error: 'rel' is a required property"

        # Node mode, the exact block of core.md §7.10 (edges in edge order, both directions).
        text = await kg.ok("kg_read", {"session_id": sid, "ids": ["retry-policy", "nope-missing", "ingest-queue"]})
        blocks, footer = text.rsplit("\n\nSession: ", 1)
        assert footer == sid
        parts = blocks.split("\n\n")
        assert len(parts) == 3, text
        assert parts[0] == (
            "▸ retry-policy (project, active)\n"
            "  gist: 3 retries, exponential 2s base, then dead-letter\n"
            "  notes:\n"
            "    - Chosen after the March outage\n"
            "    - Base delay lives in config\n"
            "  touches: src/retry.rs · config/app.toml\n"
            "  edges:\n"
            "    ingest-queue --governed-by--> retry-policy\n"
            "    retry-policy --implemented-in--> src/retry.rs"
        )
        assert parts[1].startswith("▸ nope-missing: NOT FOUND"), parts[1]
        assert "kg_search" in parts[1]
        assert "\n" not in parts[1]
        assert parts[2] == (
            "▸ ingest-queue (project, active)\n"
            "  gist: Queue of raw events\n"
            "  edges:\n"
            "    ingest-queue --governed-by--> retry-policy"
        )

        # Single id; `ids` wins over `id`; a level restriction that misses is NOT FOUND.
        single = await kg.ok("kg_read", {"session_id": sid, "id": "ingest-queue"})
        assert single == parts[2] + f"\n\nSession: {sid}"
        both = await kg.ok("kg_read", {"session_id": sid, "id": "retry-policy", "ids": ["ingest-queue"]})
        assert both == single
        wrong_level = await kg.ok("kg_read", {"session_id": sid, "id": "ingest-queue", "level": "user"})
        assert wrong_level.startswith("▸ ingest-queue: NOT FOUND")
        assert wrong_level.endswith(f"\n\nSession: {sid}")
        # Internal fields or JSON never leak.
        assert "_created_ts" not in text and "{" not in text

        # Full read now lists the nodes and edge citations.
        full = await kg.ok("kg_read", {"session_id": sid})
        assert "=== PROJECT GRAPH — 2 active, 0 archived ===" in full
        assert "  retry-policy: 3 retries, exponential 2s base, then dead-letter" in full
        assert "→ governed-by → retry-policy" in full or "← governed-by ← ingest-queue" in full


# --------------------------------------------------------------------------- kg_search


async def test_kg_search(server):
    project = server.make_project()
    async with connect(server.mcp_url) as s:
        kg = Kg(s)
        sid = await kg.start(project)
        await kg.ok(
            "kg_put_node",
            {
                "session_id": sid,
                "level": "user",
                "id": "pytest-tips",
                "gist": "Run pytest with -q for quiet output",
                "notes": ["xdist for parallel runs"],
            },
        )
        await kg.ok(
            "kg_put_node",
            {"session_id": sid, "level": "project", "id": "ci-pipeline", "gist": "CI runs pytest then cargo test"},
        )

        text = await kg.ok("kg_search", {"query": "xdist", "session_id": sid})
        lines = text.split("\n")
        assert lines[0] == "Found 1 match(es) for 'xdist' — top 1:"
        assert lines[1] == ""
        assert lines[2] == "▸ pytest-tips (user)"
        assert lines[3] == "  gist: Run pytest with -q for quiet output"
        assert lines[4] == "    - xdist for parallel runs"  # unseen hit: notes shown

        # Second time the hit is seen: flag in the header, notes dropped.
        text = await kg.ok("kg_search", {"query": "xdist", "session_id": sid})
        assert text.split("\n")[2] == "▸ pytest-tips (user, seen)"
        assert "xdist for parallel runs" not in text

        # Both levels with a session.
        text = await kg.ok("kg_search", {"query": "PYTEST", "session_id": sid})
        assert text.startswith("Found 2 match(es) for 'PYTEST' — top 2:")
        assert "▸ ci-pipeline (project)" in text and "▸ pytest-tips (user, seen)" in text

        # Nothing found, with a session: exact text.
        assert await kg.ok("kg_search", {"query": "zzzqqq", "session_id": sid}) == "No nodes found matching 'zzzqqq'"
        # Without a session: same head plus a note advising the session id.
        text = await kg.ok("kg_search", {"query": "zzzqqq"})
        assert text.startswith("No nodes found matching 'zzzqqq'")
        assert text != "No nodes found matching 'zzzqqq'"
        assert "session" in text.lower()
        text = await kg.ok("kg_search", {"query": "quiet"})
        assert text.startswith("Found 1 match(es) for 'quiet' — top 1:")

        assert await kg.err("kg_search", {}) == "Input validation error: 'query' is a required property"
        assert await kg.err("kg_search", {"query": 5}) == "Input validation error: 5 is not of type 'string'"


# --------------------------------------------------------------------------- kg_useful


async def test_kg_useful(server):
    project = server.make_project()
    async with connect(server.mcp_url) as s:
        kg = Kg(s)
        sid = await kg.start(project)
        for node in "pqrstu":
            await kg.ok("kg_put_node", {"session_id": sid, "level": "user", "id": node, "gist": f"node {node}"})

        # Fixture 036 of the reference.
        text = await kg.ok("kg_useful", {"session_id": sid, "ids": ["p", "p", "missing", "q", "r", "s", "t", "u"]})
        assert text == (
            "Marked useful: p, q, r, s, t\n"
            "Skipped p: already liked this session\n"
            "Skipped missing: not found\n"
            "Skipped u: session like budget (5) exhausted\n"
            "0 like(s) remaining this session."
        )
        # Nothing accepted: no "Marked useful" line at all.
        text = await kg.ok("kg_useful", {"session_id": sid, "ids": ["u"]})
        assert text == "Skipped u: session like budget (5) exhausted\n0 like(s) remaining this session."

        # Another session has its own budget.
        other = await kg.start(project)
        assert await kg.ok("kg_useful", {"session_id": other, "ids": ["p"]}) == (
            "Marked useful: p\n4 like(s) remaining this session."
        )
        assert await kg.ok("kg_useful", {"session_id": other, "ids": []}) == "4 like(s) remaining this session."

        assert await kg.err("kg_useful", {"session_id": sid}) == "Input validation error: 'ids' is a required property"
        assert await kg.err("kg_useful", {"session_id": sid, "ids": "p"}) == (
            "Input validation error: 'p' is not of type 'array'"
        )


# --------------------------------------------------------------------------- kg_sync


async def test_kg_sync_between_sessions(server):
    project = server.make_project()
    async with connect(server.mcp_url) as s:
        kg = Kg(s)
        a = await kg.start(project)
        b = await kg.start(project)
        assert a != b

        assert await kg.ok("kg_sync", {"session_id": b}) == "No updates from other sessions"

        await kg.ok("kg_put_node", {"session_id": a, "level": "user", "id": "ua", "gist": "user fact from A"})
        await kg.ok("kg_put_node", {"session_id": a, "level": "project", "id": "pa", "gist": "project fact from A"})
        await kg.ok(
            "kg_put_edge",
            {"session_id": a, "level": "project", "from": "pa", "to": "src/main.rs", "rel": "lives-in"},
        )
        # B's own write must not come back to B.
        await kg.ok("kg_put_node", {"session_id": b, "level": "user", "id": "ub", "gist": "user fact from B"})

        text = await kg.ok("kg_sync", {"session_id": b})
        assert text == (
            "Updates from other sessions:\n"
            "\n"
            "User: 1 node changes, 0 edge changes\n"
            "  node ua: user fact from A\n"
            "Project: 1 node changes, 1 edge changes\n"
            "  node pa: project fact from A\n"
            "  edge pa --lives-in--> src/main.rs"
        )
        # Cursor moved: nothing new for B.
        assert await kg.ok("kg_sync", {"session_id": b}) == "No updates from other sessions"

        # A sees B's write, not its own.
        text = await kg.ok("kg_sync", {"session_id": a})
        assert text == (
            "Updates from other sessions:\n"
            "\n"
            "User: 1 node changes, 0 edge changes\n"
            "  node ub: user fact from B\n"
            "Project: 0 node changes, 0 edge changes"
        )
        assert await kg.err("kg_sync", {}) == "Input validation error: 'session_id' is a required property"


# --------------------------------------------------------------------------- kg_progress


async def test_kg_progress(server):
    project = server.make_project()
    async with connect(server.mcp_url) as s:
        kg = Kg(s)
        sid = await kg.start(project)
        state = {"step": 3, "files": ["a.rs", "b.rs"], "nested": {"done": True, "ratio": 0.5}, "note": "café", "empty": []}
        assert await kg.ok("kg_progress", {"session_id": sid, "task_id": "scout", "state": state}) == (
            "Progress saved for task 'scout'"
        )
        text = await kg.ok("kg_progress", {"session_id": sid, "task_id": "scout"})
        assert text == "Progress for 'scout':\n" + json.dumps(state, indent=2)
        assert "\\u00e9" in text  # non-ASCII escaped Python-style

        # Missing task, and a stored {} counts as missing.
        assert await kg.ok("kg_progress", {"session_id": sid, "task_id": "nope"}) == "No progress found for task 'nope'"
        await kg.ok("kg_progress", {"session_id": sid, "task_id": "blank", "state": {}})
        assert await kg.ok("kg_progress", {"session_id": sid, "task_id": "blank"}) == "No progress found for task 'blank'"

        # Levels are separate stores; a write replaces the whole state.
        await kg.ok("kg_progress", {"session_id": sid, "task_id": "scout", "level": "project", "state": {"p": 1}})
        assert await kg.ok("kg_progress", {"session_id": sid, "task_id": "scout", "level": "project"}) == (
            'Progress for \'scout\':\n{\n  "p": 1\n}'
        )
        await kg.ok("kg_progress", {"session_id": sid, "task_id": "scout", "state": {"step": 4}})
        assert await kg.ok("kg_progress", {"session_id": sid, "task_id": "scout", "level": "user"}) == (
            'Progress for \'scout\':\n{\n  "step": 4\n}'
        )

        assert await kg.err("kg_progress", {"session_id": sid}) == (
            "Input validation error: 'task_id' is a required property"
        )
        assert await kg.err("kg_progress", {"session_id": sid, "task_id": "t", "state": "s"}) == (
            "Input validation error: 's' is not of type 'object'"
        )
        assert await kg.err("kg_progress", {"session_id": sid, "task_id": "t", "level": "both"}) == (
            "Input validation error: 'both' is not one of ['user', 'project']"
        )


# --------------------------------------------------------------------------- deletes


async def test_kg_delete_edge_and_node(server):
    project = server.make_project()
    async with connect(server.mcp_url) as s:
        kg = Kg(s)
        sid = await kg.start(project)
        await kg.ok("kg_put_node", {"session_id": sid, "level": "user", "id": "a", "gist": "node a"})
        await kg.ok("kg_put_node", {"session_id": sid, "level": "user", "id": "b", "gist": "node b"})
        await kg.ok("kg_put_edge", {"session_id": sid, "level": "user", "from": "a", "to": "b", "rel": "uses"})
        await kg.ok("kg_put_edge", {"session_id": sid, "level": "user", "from": "b", "to": "a", "rel": "feeds"})
        await kg.ok("kg_put_edge", {"session_id": sid, "level": "user", "from": "a", "to": "src/a.rs", "rel": "in"})

        args = {"session_id": sid, "from": "b", "to": "a", "rel": "feeds"}
        assert await kg.ok("kg_delete_edge", args) == "Edge deleted: b->a:feeds"
        # Not found is a plain answer (no "Error:" prefix), not an error result.
        assert await kg.ok("kg_delete_edge", args) == "Edge not found: b->a:feeds"
        # No ref validation on delete.
        assert await kg.ok("kg_delete_edge", {"session_id": sid, "from": "a b", "to": "c", "rel": "x y"}) == (
            "Edge not found: a b->c:x y"
        )

        assert await kg.ok("kg_delete_node", {"session_id": sid, "id": "a"}) == (
            "Deleted node 'a' and 2 connected edges from user graph"
        )
        text = await kg.err("kg_delete_node", {"session_id": sid, "id": "a"})
        assert text == "Error: Node 'a' not found in either graph"
        # b survives without edges.
        assert await kg.ok("kg_read", {"session_id": sid, "id": "b"}) == (
            f"▸ b (user, active)\n  gist: node b\n\nSession: {sid}"
        )
        assert await kg.err("kg_delete_node", {"session_id": sid}) == (
            "Input validation error: 'id' is a required property"
        )
        assert await kg.err("kg_delete_edge", {"session_id": sid, "from": "a", "to": 1, "rel": "r"}) == (
            "Input validation error: 1 is not of type 'string'"
        )


# --------------------------------------------------------------------------- unknown tool


async def test_unknown_tool_is_an_error(server):
    async with connect(server.mcp_url) as s:
        result = await s.call_tool("kg_does_not_exist", {"x": 1})
    # Our server answers with a tool result (not a JSON-RPC error): isError + Internal error prefix.
    assert result.is_error is True
    assert len(result.content) == 1
    text = result.content[0].text
    assert text.startswith("Internal error: Unknown tool: kg_does_not_exist"), text
