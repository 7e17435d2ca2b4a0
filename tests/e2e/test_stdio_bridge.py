"""`kg-memory stdio`: MCP over stdio (for Claude Desktop), relayed to the running server,
exercised with the official Python SDK's stdio client."""

from __future__ import annotations

import os

import pytest
from conftest import server_binary
from mcp import StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client
from mcp_client import Kg

NINE_TOOLS = [
    "kg_read",
    "kg_search",
    "kg_put_node",
    "kg_put_edge",
    "kg_delete_node",
    "kg_delete_edge",
    "kg_useful",
    "kg_sync",
    "kg_progress",
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
            assert [t.name for t in tools.tools] == NINE_TOOLS
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
