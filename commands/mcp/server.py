"""The memlog MCP server: the SDK's :class:`MCPServer`, its tools and
resources, the scope they serve, and the stdio transport.

Tool calls run one at a time on the server's event loop, on the one
:class:`~commands.MemoryLog` the server holds open. Whatever a tool raises
comes back as a tool result with ``isError`` set and ``"E_CODE: message"``
(:mod:`commands.mcp.errors`); nothing is logged but the tool's name and the
error code.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from importlib import metadata
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations

from eventstore import InvalidInputError, ReadOnlyError

from ..app import log as _log
from ..memory import MemoryLog
from .errors import error_result, tool_failure
from .reads import ReadTools
from .resources import add_resources
from .scope import ServerScope, named_scope
from .writes import WRITE_TOOLS, WriteTools

__all__ = ["MemlogServer", "build_server", "serve"]

# The tools that erase content for good (the clients' destructive hint).
DESTRUCTIVE = frozenset({"forget", "delete"})

INSTRUCTIONS = (
    "memlog: an event-sourced memory. remember/forget keep facts by key; record writes messages, "
    "decisions, findings, lessons, tasks and handoffs into a session; recall searches; context builds "
    "a prompt block for a session; history and as_of audit the past. Errors start with a stable code."
)


class MemlogServer(MCPServer[Any]):
    """An :class:`MCPServer` whose tool failures are results carrying memlog's codes."""

    def __init__(self, scope: ServerScope) -> None:
        super().__init__("memlog", instructions=INSTRUCTIONS, log_level="WARNING", version=_version())
        self.scope = scope
        self.arguments: dict[str, frozenset[str]] = {}

    def add_memlog_tool(self, method: Callable[..., Any], hidden: frozenset[str]) -> None:
        """Register ``method`` as a tool, without the parameters in ``hidden``
        (the user and agent of a scoped server are not arguments)."""
        tool = _as_tool(method, hidden)
        name = tool.__name__
        self.arguments[name] = frozenset(inspect.signature(tool).parameters)
        hints = ToolAnnotations(read_only_hint=name not in WRITE_TOOLS, destructive_hint=name in DESTRUCTIVE,
                                open_world_hint=False)
        self.add_tool(tool, name=name, annotations=hints)

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None) -> CallToolResult | InputRequiredResult:
        """Run a tool; every failure is a result with ``isError`` and a code."""
        refused = self._refusal(name, arguments)
        if refused is not None:
            text = f"{refused.code}: {refused.message}"
            result: CallToolResult | InputRequiredResult = error_result(text)
        else:
            try:
                result = await super().call_tool(name, arguments, context)
            except ToolError as exc:
                text = tool_failure(name, exc)
                result = error_result(text)
            else:
                text = ""
        _log.debug("mcp tool called", tool=name, error=text.partition(":")[0] or None)
        return result

    def _refusal(self, name: str, arguments: dict[str, Any]) -> InvalidInputError | ReadOnlyError | None:
        if self.scope.read_only and name in WRITE_TOOLS:
            return ReadOnlyError(f"this server is read-only: {name} is refused and nothing was written")
        unknown = sorted(set(arguments) - self.arguments.get(name, frozenset(arguments)))
        if unknown:
            return InvalidInputError(f"{name} takes no argument {', '.join(unknown)}")
        return None


def _version() -> str:
    """The installed memlog's version (the server tells it to clients); "" when not installed."""
    try:
        return metadata.version("memlog")
    except metadata.PackageNotFoundError:
        return ""


def build_server(mem: MemoryLog, scope: ServerScope) -> MemlogServer:
    """The server for ``scope`` over the open store ``mem``: read tools always,
    write tools unless read-only, and the two resources."""
    scope = named_scope(scope, mem)  # the log names its user by the pseudonym
    server = MemlogServer(scope)
    hidden = frozenset([*(["user_id"] if scope.user is not None else []),
                        *(["agent_id"] if scope.agent is not None else [])])
    reads = ReadTools(mem, scope)
    methods: list[Callable[..., Any]] = [reads.recall, reads.context, reads.show, reads.sessions,
                                         reads.memories, reads.transcript, reads.history,
                                         reads.as_of, reads.recover, reads.agents]
    if not scope.read_only:
        writes = WriteTools(mem, scope)
        methods += [writes.remember, writes.forget, writes.record, writes.complete_task,
                    writes.start_session, writes.close_session, writes.checkpoint, writes.delete,
                    writes.update_finding, writes.edit]
    for method in methods:
        server.add_memlog_tool(method, hidden)
    add_resources(server, mem, scope)
    return server


def serve(mem: MemoryLog, scope: ServerScope) -> None:
    """Serve ``mem`` over stdio until the client closes stdin."""
    build_server(mem, scope).run("stdio")


def _as_tool(method: Callable[..., Any], hidden: frozenset[str]) -> Callable[..., Any]:
    """An async function with ``method``'s name, doc and signature, less the
    ``hidden`` parameters, that calls it on the event loop's thread (tool calls
    then run one at a time, all in one thread, as the store expects)."""
    sig = inspect.signature(method, eval_str=True)
    params = [p for p in sig.parameters.values() if p.name not in hidden]

    async def tool(**kwargs: Any) -> Any:
        return method(**kwargs)

    tool.__name__ = tool.__qualname__ = method.__name__
    tool.__doc__ = inspect.getdoc(method)
    tool.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    tool.__annotations__ = {**{p.name: p.annotation for p in params}, "return": sig.return_annotation}
    return tool
