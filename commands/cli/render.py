"""The human text of results (``--json`` prints the structs themselves).

Every field is escaped for the terminal (:func:`field`): control characters
(C0, DEL, C1) and Unicode bidi overrides show as ``\\xNN`` / ``\\uNNNN``, so
stored text cannot move the cursor, recolour the screen or reorder what
follows. A multi-line block (an entry's content, the context block) keeps its
newlines and tabs (:func:`block`). JSON output is exact.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import msgspec

from .base import escape_controls

if TYPE_CHECKING:
    from ..app import EntryResult, MemoryResult, SearchResult, SessionResult, TranscriptPage
    from ..app.recording.records import MemoryPage

__all__ = ["block", "entry_text", "field", "hits_text", "memories_text", "memory_page_text", "plain",
           "session_text"]


def plain(value: Any) -> Any:
    """``value`` as JSON-ready builtins."""
    return msgspec.to_builtins(value)


def field(value: Any) -> str:
    """One value on one line, every control character escaped."""
    return escape_controls(str(value))


def fields(values: Iterable[Any]) -> str:
    """Values joined by commas, each escaped."""
    return ", ".join(field(v) for v in values)


def block(text: str, indent: str = "") -> str:
    """A multi-line text: newlines and tabs kept (later lines indented), other controls escaped."""
    return escape_controls(text, keep="\n\t").replace("\n", "\n" + indent)


def entry_text(item: EntryResult | MemoryResult) -> str:
    """An entry or memory, one field a line (content as an indented block)."""
    from ..app import MemoryResult
    from ..app.results import shown_details
    if isinstance(item, MemoryResult):
        return (f"memory {field(item.id)} ({item.state})\n  user: {field(item.user_id)}\n"
                f"  key: {field(item.key)}\n  content: {block(item.content or '', '    ')}\n"
                f"  saved: {item.saved_at}{superseded_text(item.superseded)}")
    lines = [f"{field(item.type)} {field(item.id)} ({field(item.state)})"]
    if item.content is not None:
        lines.append(f"  content: {block(item.content, '    ')}")
    for name in ("session_id", "agent_id", "role", "occurred_at", "recorded_at"):
        value = getattr(item, name)
        if value:
            lines.append(f"  {name}: {field(value)}")
    for name, value in shown_details(item.details).items():
        if value not in (None, [], ()):
            shown = fields(value) if isinstance(value, list | tuple) else field(value)
            lines.append(f"  {field(name)}: {shown}")
    if item.tags:
        lines.append(f"  tags: {fields(item.tags)}")
    if item.redactions:
        lines.append(f"  redacted at ingest: {field(item.redactions)}")
    if item.deleted:
        d = item.deleted
        lines.append(f"  deleted: request {field(d['request_id'])} by {field(d['requested_by'])} at "
                     f"{field(d['at'])}: {field(d['reason'])}")
    if item.redacted:
        r = item.redacted
        lines.append(f"  redacted: {field(r['spans'])} by {field(r['requested_by'])} at {field(r['at'])}: "
                     f"{field(r['reason'])}")
    return "\n".join(lines) + superseded_text(item.superseded)


def superseded_text(info: dict[str, Any] | None) -> str:
    """The line that says what replaced an item (empty when nothing did)."""
    if not info:
        return ""
    return f"\n  superseded: by {field(info['by'])} at {field(info['at'])} (seq {info['seq']})"


def session_text(s: SessionResult) -> str:
    """A session's manifest and statistics."""
    stats = s.statistics
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(stats["by_kind"].items())) or "no entries"
    state = " (archived)" if s.archived else ""
    state += f" (closed {s.closed_at})" if s.closed_at else ""
    return (f"{field(s.id)}{state}\n  user: {field(s.user_id or '-')}\n"
            f"  agents: {fields(s.agent_ids) or '-'}\n  tags: {fields(s.tags) or '-'}\n"
            f"  started: {s.started_at}\n  entries: {stats['entries']} ({field(kinds)}), "
            f"{stats['size_bytes']} bytes\n  last activity: {stats['last_activity'] or '-'}")


def transcript_text(page: TranscriptPage) -> str:
    """A page of a transcript: time, role, id, then the message; where the next page starts."""
    if not page.messages:
        return f"no messages (session has {page.total})"
    lines = [f"{m.occurred_at}  {m.role or '-':<9} {field(m.id)}"
             + (f"  (answers {field(m.details['tool_call_id'])})" if m.details.get("tool_call_id") else "")
             + f"\n  {field(m.content if m.content is not None else '[' + m.state + ']')}"
             for m in page.messages]
    last = page.offset + len(page.messages)
    more = f"; next: --offset {page.next_offset}" if page.next_offset is not None else ""
    lines.append(f"messages {page.offset + 1}-{last} of {page.total}{more}")
    return "\n".join(lines)


def hits_text(hits: list[SearchResult]) -> str:
    """Search hits: score, kind, id, time, then the snippet."""
    if not hits:
        return "no results"
    return "\n".join(f"{h.score:.3f}  {h.type:<9} {field(h.id)}  {h.occurred_at}\n       {field(h.snippet)}"
                     for h in hits)


def memories_text(found: list[MemoryResult]) -> str:
    """A user's memories, one ``key: content`` a line."""
    return "\n".join(f"{field(m.key)}: {field(m.content)}" for m in found) or "no memories"


def memory_page_text(page: MemoryPage) -> str:
    """A page of memories and where it stands: ``showing 1-50 of 55`` and the next offset."""
    if not page.memories:
        return "no memories" if not page.total else f"no memories at offset {page.offset} (of {page.total})"
    last = page.offset + len(page.memories)
    lines = [memories_text(page.memories), f"showing {page.offset + 1}-{last} of {page.total}"]
    if page.next_offset is not None:
        lines[-1] += f"; next page: --offset {page.next_offset}"
    return "\n".join(lines)
