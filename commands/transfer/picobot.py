"""Seed 001's JSON snapshot (``data/sessions.json``), the format its own
migration reads into SQLite: sessions with their messages, session summaries
and explicit user memories. After a successful import (not a dry run) the
snapshot is renamed ``sessions.json.migrated``, as the seed does.

The snapshot holds the seed's tables as JSON: ``{"sessions": [...],
"user_memories": [...]}`` (a bare list of sessions, or an object of sessions
by id, is read too). A session has ``id``, ``channel_type``, ``channel_id``,
``user_id``, ``created_at``, ``last_active``, ``summary`` and ``messages``;
a message ``id``, ``message_type`` (system, user, assistant, tool), ``content``,
``tool_call_id``, ``created_at`` and ``seq_order``; a memory ``user_id``,
``key``, ``content``, ``source_session_id`` and ``updated_at``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .model import (
    Bad,
    EntryRec,
    MemoryRec,
    Origin,
    Record,
    SessionRec,
    derived_id,
    event_id,
    line_of,
    load_json,
    session_id_for,
    source_time,
)

__all__ = ["FORMAT", "finish", "read", "snapshot_of"]

FORMAT = "picobot"
SNAPSHOT = "sessions.json"


def snapshot_of(path: Path) -> Path:
    """The snapshot a path names: the file itself, or ``sessions.json`` in a data directory."""
    if path.is_dir():
        if (path / SNAPSHOT).is_file():
            return path / SNAPSHOT
        if (path / (SNAPSHOT + ".migrated")).is_file():
            raise FileNotFoundError(f"{path / SNAPSHOT} was already migrated (sessions.json.migrated); "
                                    "name that file to import it again")
        raise FileNotFoundError(f"no {SNAPSHOT} in {path}")
    if not path.is_file():
        raise FileNotFoundError(f"no snapshot at {path}")
    return path


def read(path: Path) -> list[Record]:
    """Every session, message, summary and memory of the snapshot."""
    snapshot = snapshot_of(path)
    rel = snapshot.name
    doc = load_json(snapshot, rel)
    if isinstance(doc, Bad):
        return [doc]
    sessions: Any = doc
    memories: Any = []
    if isinstance(doc, dict) and ("sessions" in doc or "user_memories" in doc):
        sessions, memories = doc.get("sessions") or [], doc.get("user_memories") or []
    if isinstance(sessions, dict):
        sessions = [s if not isinstance(s, dict) or "id" in s else {**s, "id": k}
                    for k, s in sessions.items()]
    out: list[Record] = []
    if not isinstance(sessions, list) or not isinstance(memories, list):
        return [Bad(Origin(rel, line_of(doc, 1)), "sessions and user_memories must be lists")]
    for session in sessions:
        out.extend(_session(rel, session))
    out.extend(_memory(rel, m) for m in memories)
    return out


def finish(path: Path) -> None:
    """Rename the snapshot ``sessions.json.migrated`` (a file already so named stays)."""
    snapshot = snapshot_of(path)
    if not snapshot.name.endswith(".migrated"):
        snapshot.rename(snapshot.with_name(snapshot.name + ".migrated"))


def _session(rel: str, session: object) -> list[Record]:
    origin = Origin(rel, line_of(session))
    if not isinstance(session, dict) or session.get("id") is None:
        return [Bad(origin, "a session must be an object with an id")]
    sid = session_id_for(FORMAT, session["id"])
    metadata = {k: str(session[k]) for k in ("channel_id", "created_at", "last_active")
                if session.get(k) is not None}
    out: list[Record] = [SessionRec(origin, event_id(FORMAT, f"session:{sid}"), sid,
                                    user_id=session.get("user_id"), channel=session.get("channel_type"),
                                    metadata=metadata, tags=("picobot",))]
    messages = session.get("messages") or []
    if not isinstance(messages, list):
        return [*out, Bad(origin, "messages must be a list")]
    ordered = sorted(enumerate(messages), key=lambda m: (_order(m[1]), m[0]))
    out.extend(_message(rel, sid, n, m) for n, m in ordered)
    summary = session.get("summary")
    if isinstance(summary, dict):
        summary = summary.get("summary")
    if summary:
        source = f"{sid}/summary"
        out.append(EntryRec(origin, event_id(FORMAT, source), derived_id(FORMAT, "summary", source),
                            "summary", summary, session_id=sid,
                            occurred_at=source_time(session.get("last_active"))))
    return out


def _order(message: object) -> int:
    value = message.get("seq_order") if isinstance(message, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _message(rel: str, sid: str, n: int, message: object) -> Record:
    origin = Origin(rel, line_of(message))
    if not isinstance(message, dict):
        return Bad(origin, "a message must be a JSON object")
    source = f"{sid}/messages/{message.get('id', f'#{n}')}"
    details: dict[str, Any] = {}
    if message.get("tool_call_id") is not None:
        details["tool_call_id"] = message["tool_call_id"]
    return EntryRec(origin, event_id(FORMAT, source), derived_id(FORMAT, "message", source), "message",
                    message.get("content"), session_id=sid, role=message.get("message_type"),
                    occurred_at=source_time(message.get("created_at")), details=details or None)


def _memory(rel: str, memory: object) -> Record:
    origin = Origin(rel, line_of(memory))
    if not isinstance(memory, dict):
        return Bad(origin, "a user memory must be a JSON object")
    # A later snapshot with the key saved again imports the new version (remember replaces).
    when = memory.get("updated_at", memory.get("created_at"))
    source = f"memory/{memory.get('user_id')}/{memory.get('key')}/{when}"
    sid = memory.get("source_session_id")
    return MemoryRec(origin, event_id(FORMAT, source), derived_id(FORMAT, "memory", source),
                     memory.get("user_id"), memory.get("key"), memory.get("content"),
                     session_id=None if sid is None else session_id_for(FORMAT, sid))
