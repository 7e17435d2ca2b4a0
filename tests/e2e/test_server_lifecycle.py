"""Restarting the real server on the same HOME and storage: graphs, progress and KG sessions
survive a SIGTERM (clean exit 0), and an idle session expires after 24 h of server time
(frozen with KG_CLOCK_FILE)."""

from __future__ import annotations

import json

import pytest
from mcp_client import RECALL_PHRASE, SESSION_FOOTER, Kg, connect

pytestmark = pytest.mark.anyio

T0 = 1_800_000_000.0  # 2027-01-15, an arbitrary frozen "now"
HOUR = 3600.0


async def test_restart_keeps_graphs_progress_and_session(kg_server_factory):
    first = kg_server_factory(clock=T0)
    project = first.make_project("svc")
    async with connect(first.mcp_url) as s:
        kg = Kg(s)
        sid = await kg.start(project)
        await kg.ok("kg_put_node", {"session_id": sid, "level": "user", "id": "u1", "gist": "user gist"})
        await kg.ok("kg_put_node", {"session_id": sid, "level": "project", "id": "p1", "gist": "project gist"})
        await kg.ok("kg_put_edge", {"session_id": sid, "level": "project", "from": "p1", "to": "src/p1.rs", "rel": "in"})
        await kg.ok("kg_progress", {"session_id": sid, "task_id": "scout", "state": {"cursor": 7}})
    assert first.stop() == 0, first.log()

    # On disk after the graceful stop (storage layout of core.md §2.1).
    storage = first.storage
    user = json.loads((storage / "user.json").read_text())
    assert "u1" in json.dumps(user)
    assert "p1" in (storage / "projects" / "svc" / "graph.json").read_text()
    sessions = json.loads((storage / "sessions.json").read_text())
    assert sessions[sid]["project_path"] == str(project)

    second = kg_server_factory(root=first.root, clock=T0 + 60)
    async with connect(second.mcp_url) as s:
        kg = Kg(s)
        # The KG session outlives the server: no cwd needed, same id, not a first read.
        text = await kg.ok("kg_read", {"session_id": sid})
        assert text.endswith(f"\n\nSession: {sid}"), text[-300:]
        assert RECALL_PHRASE not in text
        assert "  u1: user gist" in text and "  p1: project gist" in text
        assert await kg.ok("kg_read", {"session_id": sid, "id": "p1"}) == (
            f"▸ p1 (project, active)\n  gist: project gist\n  edges:\n    p1 --in--> src/p1.rs\n\nSession: {sid}"
        )
        assert await kg.ok("kg_progress", {"session_id": sid, "task_id": "scout"}) == (
            "Progress for 'scout':\n{\n  \"cursor\": 7\n}"
        )


async def test_idle_session_expires_after_a_day(kg_server_factory):
    first = kg_server_factory(clock=T0)
    project = first.make_project("svc")
    async with connect(first.mcp_url) as s:
        sid = await Kg(s).start(project)
    assert first.stop() == 0, first.log()

    # 23 h later the session is still known (and this use refreshes its activity).
    second = kg_server_factory(root=first.root, clock=T0 + 23 * HOUR)
    async with connect(second.mcp_url) as s:
        text = await Kg(s).ok("kg_read", {"session_id": sid})
        assert SESSION_FOOTER.search(text).group(1) == sid
    assert second.stop() == 0, second.log()

    # Then 25 h of silence: the record is skipped when the file loads.
    third = kg_server_factory(root=first.root, clock=T0 + 48 * HOUR)
    async with connect(third.mcp_url) as s:
        kg = Kg(s)
        text = await kg.err("kg_read", {"session_id": sid})
        assert text.startswith("Error: ") and "cwd" in text
        fresh = await kg.start(project)
        assert fresh != sid
