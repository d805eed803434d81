"""Seed 004's state directory: ``agents/<agent-id>/sessions/<session-id>.jsonl``
transcripts (with ``sessions.json`` naming their session keys) and
``agents/<agent-id>/agent/LEARNINGS.md``.

A transcript line is a message event, ``{"type": "message", "id", "parentId",
"timestamp", "message": {"role", "content"}}`` (content a string or a list of
parts whose ``text`` parts are kept), or a bare ``{"role", "content",
"timestamp", "id"}``; other event types (session header, model changes,
compactions) and messages without text are not memories and are passed over.
Each transcript is one session of its agent. Learnings (``## Category`` then
``- [date] text``) become lessons in the agent's ``gimli-<agent>`` session,
tagged with their category. The SQLite memory index is derived and not read.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .model import (
    Bad,
    EntryRec,
    Origin,
    Record,
    SessionRec,
    derived_id,
    event_id,
    read_jsonl,
    session_id_for,
    source_time,
)

__all__ = ["FORMAT", "read"]

FORMAT = "gimli"
_ROLES = {"toolResult": "tool", "tool_result": "tool", "toolresult": "tool"}
_SECTION = re.compile(r"^##\s+(.+?)\s*\Z")
_ITEM = re.compile(r"^[-*]\s+(?:\[(\d{4}-\d{2}-\d{2}[^\]]*)\]\s*)?(.+?)\s*\Z")


def agents_of(path: Path) -> tuple[Path, list[Path]]:
    """The root files are named from, and the agent directories under a path
    (a state directory, its ``agents/``, or one agent's directory)."""
    if (path / "agents").is_dir():
        base = path / "agents"
    elif path.name == "agents" and path.is_dir():
        base = path
    elif (path / "sessions").is_dir() or (path / "agent").is_dir():
        return path.parent, [path]
    else:
        raise FileNotFoundError(f"no gimli agents/ directory under {path}")
    return base, sorted(p for p in base.iterdir() if p.is_dir())


def read(path: Path) -> list[Record]:
    """Each agent's transcripts (one session each), then its learnings."""
    root, agents = agents_of(path)
    out: list[Record] = []
    for agent in agents:
        keys = _session_keys(agent / "sessions" / "sessions.json")
        folder = agent / "sessions"
        for transcript in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
            out.extend(_transcript(root, agent.name, transcript, keys.get(transcript.stem)))
        learnings = agent / "agent" / "LEARNINGS.md"
        if learnings.is_file():
            out.extend(_learnings(root, agent.name, learnings))
    return out


def _session_keys(path: Path) -> dict[str, str]:
    """Session id -> session key, from ``sessions.json`` (when readable)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict):
        return {}
    return {v["sessionId"]: k for k, v in doc.items()
            if isinstance(v, dict) and isinstance(v.get("sessionId"), str)}


def _transcript(root: Path, agent: str, path: Path, key: str | None) -> list[Record]:
    rel = path.relative_to(root).as_posix()
    sid = session_id_for(FORMAT, path.stem)
    metadata = {"session_key": key} if key else {}
    out: list[Record] = [SessionRec(Origin(rel, 0), event_id(FORMAT, f"session:{agent}/{path.stem}"), sid,
                                    agent_ids=(agent,), tags=("gimli",), metadata=metadata)]
    for origin, obj, reason in read_jsonl(path, rel):
        if obj is None:
            out.append(Bad(origin, reason))
            continue
        rec = _message(origin, agent, path.stem, sid, obj)
        if rec is not None:
            out.append(rec)
    return out


def _text(content: object) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p["text"] for p in content if isinstance(p, dict) and p.get("type", "text") == "text"
                 and isinstance(p.get("text"), str)]
        return "\n".join(parts) if parts else None
    return None


def _message(origin: Origin, agent: str, stem: str, sid: str, obj: dict[str, Any]) -> Record | None:
    if obj.get("type", "message") != "message":
        return None
    inner = obj.get("message")
    message: dict[str, Any] = inner if isinstance(inner, dict) else obj
    if "role" not in message:
        return Bad(origin, "a message needs a role")
    text = _text(message.get("content"))
    if text is None or not text.strip():
        return None
    source = f"{agent}/{stem}/{obj.get('id', f'line-{origin.line}')}"
    parent = obj.get("parentId")
    details: dict[str, Any] = {}
    if parent is not None:
        details["parent_id"] = derived_id(FORMAT, "message", f"{agent}/{stem}/{parent}")
    call = message.get("toolCallId") or message.get("tool_call_id")
    if call is not None:
        details["tool_call_id"] = call
    role = message.get("role")
    return EntryRec(origin, event_id(FORMAT, source), derived_id(FORMAT, "message", source), "message", text,
                    session_id=sid, agent_id=agent,
                    role=_ROLES.get(role, role) if isinstance(role, str) else role,
                    occurred_at=source_time(obj.get("timestamp", message.get("timestamp"))),
                    details=details or None)


def _learnings(root: Path, agent: str, path: Path) -> list[Record]:
    rel = path.relative_to(root).as_posix()
    sid = session_id_for(FORMAT, f"gimli-{agent}")
    mtime = int(path.stat().st_mtime * 1_000_000)
    items: list[Record] = []
    section, ordinal = "learnings", 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        heading = _SECTION.match(line.strip())
        if heading:
            section, ordinal = _slug(heading.group(1)), 0
            continue
        item = _ITEM.match(line.strip())
        if item is None:
            continue
        ordinal += 1
        source = f"{agent}/LEARNINGS/{section}/{ordinal}"
        when = source_time(item.group(1)) if item.group(1) else mtime
        entry_id = derived_id(FORMAT, "lesson", source)
        items.append(EntryRec(Origin(rel, number), event_id(FORMAT, source), entry_id, "lesson",
                              item.group(2), session_id=sid, agent_id=agent, tags=(section,),
                              occurred_at=when))
    if not items:
        return []
    session = SessionRec(Origin(rel, 0), event_id(FORMAT, f"session:{agent}/learnings"), sid,
                         agent_ids=(agent,), tags=("gimli", "learnings"))
    return [session, *items]


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "learnings"
