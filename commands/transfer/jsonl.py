"""memlog's own JSONL export (:mod:`commands.transfer.export`), read back
with its ids: the round trip of ``memlog export --format jsonl``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .model import Bad, EntryRec, MemoryRec, Origin, Record, SessionRec, event_id, read_jsonl

__all__ = ["FORMAT", "read"]

FORMAT = "jsonl"


def read(path: Path) -> list[Record]:
    """Every session, entry and memory line of an export file."""
    if not path.is_file():
        raise FileNotFoundError(f"no export file at {path}")
    out: list[Record] = []
    for origin, obj, reason in read_jsonl(path, path.name):
        if obj is None:
            out.append(Bad(origin, reason))
            continue
        rec = _record(origin, obj)
        if rec is not None:
            out.append(rec)
    return out


def _record(origin: Origin, obj: dict[str, Any]) -> Record | None:
    kind, oid = obj.get("type"), obj.get("id")
    if kind == "memlog.export":
        return None
    if not isinstance(oid, str):
        return Bad(origin, "a line needs a string id")
    if kind == "session":
        return SessionRec(origin, event_id(FORMAT, f"session:{oid}"), oid, user_id=obj.get("user_id"),
                          agent_ids=obj.get("agent_ids") or (), tags=obj.get("tags") or (),
                          metadata=obj.get("metadata"), channel=obj.get("channel"),
                          archived=bool(obj.get("archived")), closed=bool(obj.get("closed")))
    if kind == "memory":
        return MemoryRec(origin, event_id(FORMAT, f"memory:{oid}"), oid, obj.get("user_id"), obj.get("key"),
                         obj.get("content"))
    if kind == "entry":
        return EntryRec(origin, event_id(FORMAT, f"entry:{oid}"), oid, str(obj.get("kind")),
                        obj.get("content"),
                        session_id=obj.get("session_id"), user_id=obj.get("user_id"),
                        agent_id=obj.get("agent_id"), role=obj.get("role"), tags=obj.get("tags") or (),
                        importance=obj.get("importance"), occurred_at=obj.get("occurred_at"),
                        derived_from=obj.get("derived_from") or (), details=obj.get("details"),
                        redactions=obj.get("redactions"))
    return Bad(origin, "type must be session, entry or memory")
