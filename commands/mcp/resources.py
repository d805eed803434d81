"""The resources: ``memory://entry/{id}`` and ``memory://session/{id}/transcript``.

Both answer JSON (``application/json``) in the shapes of the tools' results.
The ids go through the scope guard: another user's id fails exactly like an
unknown one. The transcript lists a session's live messages in order, a page
at a time (``memory://session/{id}/transcript?limit=50&offset=0``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from mcp.server.mcpserver import MCPServer

from eventstore import InvalidInputError

from ..memory import MemoryLog
from .errors import resource_error
from .results import show_out, transcript_out
from .scope import Guard, ServerScope

__all__ = ["ENTRY_URI", "TRANSCRIPT_URI", "add_resources"]

ENTRY_URI = "memory://entry/{id}"
TRANSCRIPT_URI = "memory://session/{id}/transcript{?limit,offset}"

_json = msgspec.json.Encoder()


def add_resources(server: MCPServer[Any], mem: MemoryLog, scope: ServerScope) -> None:
    """Register the two resource templates on ``server``."""
    guard = Guard(mem, scope)

    async def entry(id: str) -> str:
        """An entry or a memory by id, as the show tool gives it."""
        return _answer(lambda: show_out(guard.item(id)))

    async def transcript(id: str, limit: str = "50", offset: str = "0") -> str:
        """A session's messages in order, a page at a time, with the total."""
        return _answer(lambda: transcript_out(mem.transcript(
            guard.session(id).id, limit=_number(limit, "limit"), offset=_number(offset, "offset"))))

    server.resource(ENTRY_URI, name="entry", mime_type="application/json")(entry)
    server.resource(TRANSCRIPT_URI, name="transcript", mime_type="application/json")(transcript)


def _number(text: str, name: str) -> int:
    """A query variable as an integer (the URI's text; checked here, not by
    the SDK, so a bad one is a coded error rather than a crash)."""
    if not text.isdigit() or len(text) > 9:
        raise InvalidInputError(f"{name} must be a whole number (got {text[:20]!r})")
    return int(text)


def _answer(read: Callable[[], object]) -> str:
    """``read()`` as JSON text, or the resource error of what it raised."""
    try:
        return _json.encode(read()).decode()
    except Exception as exc:
        raise resource_error(exc) from None


