"""`kg-memory stdio`: MCP over stdio (for Claude Desktop), relayed to the running server,
exercised with the official Python SDK's stdio client."""

from __future__ import annotations

import os
import signal

import pytest
from conftest import free_port, server_binary
from kg_wiring import clean_env, holder, stop_holder, wait_for_holder
from mcp import StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client
from mcp_client import Kg

# The reference's nine, with ours: a rename beside the write, the touch fix last.
TOOLS = [
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


def bridge(server) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    env.update(HOME=str(server.home), KG_HTTP_PORT=str(server.port), KG_STORAGE_ROOT=str(server.storage))
    return StdioServerParameters(command=str(server_binary()), args=["stdio"], env=env)


@pytest.mark.anyio
async def test_stdio_bridge_serves_every_tool(kg_server):
    project = kg_server.make_project("desk")
    async with stdio_client(bridge(kg_server)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            assert [t.name for t in tools.tools] == TOOLS
            kg = Kg(session)
            sid = await kg.start(project)
            text = await kg.ok("kg_put_node", {"session_id": sid, "level": "project", "id": "via-stdio", "gist": "Written through the stdio bridge"})
            assert text == "Node 'via-stdio' saved to project graph"
            found = await kg.ok("kg_search", {"session_id": sid, "query": "bridge"})
            assert "via-stdio" in found
            err = await kg.err("kg_put_node", {"session_id": sid, "level": "project", "id": "x"})
            assert err == "Input validation error: 'gist' is a required property"
    # The write went through the one server, so it is on its disk.
    assert "via-stdio" in (kg_server.storage / "projects" / "desk" / "graph.json").read_text()


@pytest.mark.anyio
async def test_stdio_bridge_restarts_a_server_that_died(shm_dir):
    """The bridge starts a server on its port and storage root when none answers, and
    again when that one dies mid-session: the next call is answered, not failed."""
    home, storage = shm_dir / "home", shm_dir / "storage"
    home.mkdir()
    port = free_port()
    params = StdioServerParameters(
        command=str(server_binary()),
        args=["stdio", "--port", str(port), "--storage", str(storage)],
        env=clean_env(home),
    )
    try:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                assert [t.name for t in (await session.list_tools()).tools] == TOOLS
                first = wait_for_holder(storage)
                assert first["port"] == port
                stop_holder(storage, signal.SIGKILL)
                assert [t.name for t in (await session.list_tools()).tools] == TOOLS
                second = holder(storage)
                assert second and second["pid"] != first["pid"] and second["port"] == port
    finally:
        stop_holder(storage)
