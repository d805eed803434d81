"""The memory-writing instruction that ends a context block: how the agent
reading the block saves to memory, through the face it is served by.

Over MCP (``face="mcp"``, the ``context`` tool) it names the tools
``remember`` and ``record``; otherwise (``face="cli"``, the command line and
the library) the ``memlog`` commands, with the session's id (and its user's).
The setting ``memory_instruction`` (on by default) turns it off. It is one
section of the fit, named ``instruction``, printed last and counted in the
budget like any other; over budget it is trimmed and dropped after every
section but the memory resources' and the handoff
(:data:`commands.app.recall.context.DROP_ORDER`). A session with nothing else to
show still gets it: a new agent learns first how to save.
"""

from __future__ import annotations

from eventstore import InvalidInputError, shown
from projections import SessionView

from .fitting import Section

__all__ = ["FACES", "TITLE", "instruction"]

FACES: tuple[str, ...] = ("cli", "mcp")
TITLE = "Saving to memory:"

_MCP = ("- Save what should last with the MCP tools: record (session_id {sid}, kind lesson, decision, "
        "finding, task or handoff{user}.")
_CLI = ("- Save what should last with memlog: memlog add lesson {sid} --content TEXT (or decision "
        "--decision, finding --description, task, handoff){user}.")


def instruction(session: SessionView, face: str, enabled: bool) -> list[Section]:
    """The instruction section for ``session`` served by ``face`` (none when disabled)."""
    if face not in FACES:
        raise InvalidInputError(f"face must be cli or mcp (got {shown(face)})")
    if not enabled:
        return []
    uid = session.user_id
    if face == "mcp":
        text = _MCP.format(sid=session.session_id,
                           user=") or remember (a fact about the user, by key)" if uid else ")")
    else:
        user = f"; a fact about the user: memlog remember --user {uid} KEY TEXT" if uid else ""
        text = _CLI.format(sid=session.session_id, user=user)
    return [Section("instruction", TITLE, [text])]
