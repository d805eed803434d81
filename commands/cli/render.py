"""The human text of results (``--json`` prints the structs themselves)."""

from __future__ import annotations

from typing import Any

import msgspec

from ..app import EntryResult, MemoryResult, SearchResult, SessionResult

__all__ = ["entry_text", "hits_text", "plain", "session_text"]


def plain(value: Any) -> Any:
    """``value`` as JSON-ready builtins."""
    return msgspec.to_builtins(value)


def entry_text(item: EntryResult | MemoryResult) -> str:
    """An entry or memory, one field a line."""
    if isinstance(item, MemoryResult):
        return f"memory {item.id} ({item.state})\n  user: {item.user_id}\n  key: {item.key}\n" \
               f"  content: {item.content}\n  saved: {item.saved_at}"
    lines = [f"{item.type} {item.id} ({item.state})"]
    if item.content is not None:
        lines.append(f"  content: {item.content}")
    for name in ("session_id", "agent_id", "role", "occurred_at", "recorded_at"):
        value = getattr(item, name)
        if value:
            lines.append(f"  {name}: {value}")
    for name, value in item.details.items():
        if value not in (None, [], ()):
            lines.append(f"  {name}: {value}")
    if item.tags:
        lines.append(f"  tags: {', '.join(item.tags)}")
    if item.redactions:
        lines.append(f"  redacted at ingest: {item.redactions}")
    if item.deleted:
        d = item.deleted
        lines.append(f"  deleted: request {d['request_id']} by {d['requested_by']} at {d['at']}: "
                     f"{d['reason']}")
    if item.redacted:
        r = item.redacted
        lines.append(f"  redacted: {r['spans']} by {r['requested_by']} at {r['at']}: {r['reason']}")
    return "\n".join(lines)


def session_text(s: SessionResult) -> str:
    """A session's manifest and statistics."""
    stats = s.statistics
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(stats["by_kind"].items())) or "no entries"
    return (f"{s.id}{' (archived)' if s.archived else ''}\n  user: {s.user_id or '-'}\n"
            f"  agents: {', '.join(s.agent_ids) or '-'}\n  tags: {', '.join(s.tags) or '-'}\n"
            f"  started: {s.started_at}\n  entries: {stats['entries']} ({kinds}), "
            f"{stats['size_bytes']} bytes\n  last activity: {stats['last_activity'] or '-'}")


def hits_text(hits: list[SearchResult]) -> str:
    """Search hits: score, kind, id, time, then the snippet."""
    if not hits:
        return "no results"
    return "\n".join(f"{h.score:.3f}  {h.type:<9} {h.id}  {h.occurred_at}\n       {h.snippet}" for h in hits)
