"""Errors as the MCP client sees them: ``"E_CODE: message"``, never a traceback.

A tool's failure is a tool result with ``isError`` set and one text block,
``"<code>: <message>"``, whose code is memlog's stable code
(:data:`eventstore.CODES`). memlog's messages name ids, fields and counts,
never content. An exception memlog did not raise on purpose is answered with
``E_INTERNAL`` and its type name only. Arguments that fail the tool's input
schema are ``E_SCHEMA_INVALID`` with the fields and what is wrong, never the
values. A resource read fails with a protocol error carrying the same text.
"""

from __future__ import annotations

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError

from eventstore import (
    E_INTERNAL,
    E_SCHEMA_INVALID,
    E_STORAGE_IO,
    E_USAGE,
    MemlogError,
    NotFoundError,
)

__all__ = ["error_result", "error_text", "resource_error", "tool_failure"]


def error_text(exc: BaseException) -> str:
    """``"<code>: <message>"`` for any exception, without content or traceback."""
    if isinstance(exc, MemlogError):
        return f"{exc.code}: {_one_line(exc.message)}"
    if isinstance(exc, ValidationError):
        return f"{E_SCHEMA_INVALID}: invalid arguments: {_fields(exc)}"
    if isinstance(exc, OSError):
        return f"{E_STORAGE_IO}: {type(exc).__name__} ({exc.strerror or 'no detail'})"
    return f"{E_INTERNAL}: internal error ({type(exc).__name__})"


def tool_failure(name: str, exc: ToolError) -> str:
    """The text of a failed tool call: the cause the SDK wrapped, or (no
    cause) an unknown tool."""
    cause = exc.__cause__
    if cause is not None:
        return error_text(cause)
    if str(exc).startswith("Unknown tool"):
        return f"{E_USAGE}: unknown tool {name!r}"
    return f"{E_INTERNAL}: internal error ({type(exc).__name__})"


def error_result(text: str) -> CallToolResult:
    """A tool result with ``isError`` set and ``text`` as its one block."""
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def resource_error(exc: BaseException) -> ResourceError:
    """The protocol error of a failed resource read (invalid params for an
    unknown or out-of-scope id)."""
    if isinstance(exc, NotFoundError):
        return ResourceNotFoundError(error_text(exc))
    return ResourceError(error_text(exc))


def _fields(exc: ValidationError) -> str:
    """Each failing field with pydantic's message (which names no input value)."""
    parts = []
    for err in exc.errors(include_input=False, include_url=False):
        where = ".".join(str(part) for part in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def _one_line(message: str) -> str:
    return " ".join(message.split())
