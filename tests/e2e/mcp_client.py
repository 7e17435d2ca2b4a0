"""MCP client helpers for the end-to-end tests (official Python `mcp` SDK, streamable HTTP)."""

from __future__ import annotations

import re
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

SESSION_FOOTER = re.compile(r"\n\nSession: ([0-9a-f]{8})(\n|$)")
RECALL_PHRASE = "I have recalled KG Memories"


@asynccontextmanager
async def connect(url: str) -> AsyncIterator[ClientSession]:
    """An initialised MCP client session over streamable HTTP.

    A failing assertion inside the block reaches pytest as itself, not wrapped in the
    transport's task-group ExceptionGroup.
    """
    try:
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session
    except BaseExceptionGroup as group:
        inner: BaseException = group
        while isinstance(inner, BaseExceptionGroup) and len(inner.exceptions) == 1:
            inner = inner.exceptions[0]
        raise inner from None


class Kg:
    """Thin wrapper: call a tool, get (text, is_error)."""

    def __init__(self, session: ClientSession):
        self.session = session

    async def call(self, name: str, args: dict[str, Any] | None = None) -> tuple[str, bool]:
        result = await self.session.call_tool(name, args or {})
        texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
        assert len(texts) == len(result.content) == 1, f"{name}: expected one text block, got {result.content!r}"
        return texts[0], bool(result.is_error)

    async def ok(self, name: str, args: dict[str, Any] | None = None) -> str:
        text, is_error = await self.call(name, args)
        assert not is_error, f"{name}({args}) unexpectedly failed: {text}"
        return text

    async def err(self, name: str, args: dict[str, Any] | None = None) -> str:
        text, is_error = await self.call(name, args)
        assert is_error, f"{name}({args}) should set isError, got: {text}"
        return text

    async def start(self, cwd) -> str:
        """First kg_read for a project: returns the new KG session id."""
        text = await self.ok("kg_read", {"cwd": str(cwd)})
        m = SESSION_FOOTER.search(text)
        assert m, f"no Session footer in first kg_read:\n{text}"
        return m.group(1)


