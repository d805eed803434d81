"""CLI commands that let agents reach memlog: ``mcp``, the stdio MCP server.

The MCP SDK is an extra (``pip install 'memlog[mcp]'``): it is imported when
the command runs, so the core install works without it and says what to
install when it is missing.
"""

from __future__ import annotations

import click

from eventstore import UsageError

from .base import Context, pass_context

__all__ = ["mcp"]

_MISSING = "memlog mcp needs the MCP SDK, an extra: pip install 'memlog[mcp]'"


@click.command()
@click.option("--user", "user_id", help="Serve this user alone (without it: every user, an admin mode).")
@click.option("--agent", "agent_id", help="The agent of what the server records, and of its searches' scope.")
@click.option("--read-only", is_flag=True, help="Refuse every write (E_READ_ONLY); write tools are hidden. "
              "memlog --read-only mcp does the same.")
@pass_context
def mcp(ctx: Context, user_id: str | None, agent_id: str | None, read_only: bool) -> None:
    """Serve the store to an MCP client over stdio (stdout carries the protocol only).

    Events are recorded with the actor mcp[:USER][@AGENT], USER as its pseudonym."""
    try:
        from ..mcp import ServerScope, serve
        from ..mcp.scope import named_scope
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in ("mcp", "mcp_types", "pydantic"):
            raise
        raise UsageError(_MISSING) from None
    read_only = read_only or ctx.read_only
    ctx.read_only = read_only  # the store itself refuses writes too (MemoryLog.open(read_only=True))
    scope = ServerScope(user_id, agent_id, read_only)
    with ctx.memory(create=not read_only) as mem:
        scope = named_scope(scope, mem)  # the user as its pseudonym in the log's headers
        who = f"user {user_id}" if user_id else "every user (unscoped admin mode)"
        click.echo(f"memlog mcp: serving {ctx.data_dir} for {who}"
                   f"{' read-only' if read_only else ''} as {scope.actor}", err=True)
        serve(mem, scope)
