"""A small client for tests/test_mcp.py: ``memlog mcp`` started as a real
subprocess by the SDK's stdio client, one call at a time."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

ROOT = Path(__file__).resolve().parent.parent

# Debug logs as JSON on the server's stderr, so a test can look for content in them.
SERVER_ENV = {"MEMLOG_LOG": "json", "MEMLOG_LOG_LEVEL": "DEBUG"}


class Conn:
    """One client session with a running server."""

    def __init__(self, session: ClientSession, server: Any = None) -> None:
        self.session = session
        self.server = server  # the server's name and version, as it introduced itself

    async def tools(self) -> dict[str, Any]:
        """The tools the server lists, by name."""
        return {t.name: t for t in (await self.session.list_tools()).tools}

    async def call(self, name: str, **args: Any) -> Any:
        """A tool's structured result; the call must succeed."""
        result = await self.session.call_tool(name, args)
        assert not result.is_error, (name, _text(result))
        assert result.structured_content is not None, name
        return result.structured_content

    async def fail(self, name: str, **args: Any) -> str:
        """The error text of a tool call that must fail."""
        result = await self.session.call_tool(name, args)
        assert result.is_error, (name, result.structured_content)
        assert result.structured_content is None
        return _text(result)

    async def read(self, uri: str) -> str:
        """A resource's text."""
        found = await self.session.read_resource(uri)
        block = found.contents[0]
        assert hasattr(block, "text")
        return str(block.text)

    async def read_error(self, uri: str) -> str:
        """The error message of a resource read that must fail."""
        try:
            await self.session.read_resource(uri)
        except MCPError as exc:
            return str(exc)
        raise AssertionError(f"reading {uri} did not fail")


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


@asynccontextmanager
async def serve(store: Path, *flags: str, errlog: Path, env: dict[str, str] | None = None
                ) -> AsyncIterator[Conn]:
    """Start ``memlog --dir STORE mcp FLAGS`` (with ``env`` added) and yield a connected client."""
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "commands", "--dir", str(store), "mcp", *flags],
                                   env={**SERVER_ENV, **(env or {})}, cwd=str(ROOT))
    with errlog.open("a") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            yield Conn(session, init.server_info)
