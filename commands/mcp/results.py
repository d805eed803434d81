"""What the MCP tools return: TypedDicts, so the SDK publishes an output
schema for each tool and sends structured content (not text blobs).

The shapes follow the facade's result structs (``commands.app.results``) as
JSON builtins: tuples are lists, times ISO 8601 strings in UTC. Deletion
reports carry ids, counts and the purge's outcome, never content.
"""

from __future__ import annotations

from typing import Any, cast

import msgspec
from typing_extensions import TypedDict  # pydantic (the SDK) reads nested ones below Python 3.12

from ..app import (
    ContextBlock,
    DeletionReport,
    EntryResult,
    HistoryItem,
    MemoryResult,
    SearchResult,
    SessionResult,
    TranscriptPage,
)
from ..app.sessions.agents import AgentResult
from ..app.upkeep.checkpoints import Recovery

__all__ = [
    "AgentOut",
    "AgentsOut",
    "AsOfOut",
    "ContextOut",
    "DeletionOut",
    "EntryOut",
    "HistoryItemOut",
    "HistoryOut",
    "HitOut",
    "MemoryOut",
    "MemoryPageOut",
    "RecallOut",
    "RecoveryOut",
    "SectionOut",
    "SessionOut",
    "SessionsOut",
    "ShowOut",
    "TranscriptOut",
    "WrittenOut",
    "agents_out",
    "context_out",
    "deletion_out",
    "entry_out",
    "history_item_out",
    "hit_out",
    "memory_out",
    "recovery_out",
    "session_out",
    "show_out",
    "transcript_out",
]


class EntryOut(TypedDict):
    """An entry (``content`` is None unless it is live or redacted)."""

    id: str
    type: str
    state: str
    content: str | None
    session_id: str | None
    user_id: str | None
    agent_id: str | None
    role: str | None
    tags: list[str]
    importance: float | None
    details: dict[str, Any]
    occurred_at: str | None
    recorded_at: str | None
    recorded_seq: int | None
    derived_from: list[str]
    redactions: dict[str, int]
    deleted: dict[str, Any] | None
    redacted: dict[str, Any] | None
    superseded: dict[str, Any] | None  # by, seq, at: a later preference of the same key


class MemoryOut(TypedDict):
    """A remembered fact, by key."""

    id: str
    user_id: str
    key: str
    content: str | None
    state: str
    saved_at: str
    superseded: dict[str, Any] | None  # by, seq, at: a later save under the key
    session_id: str | None  # the session it was said in, if any


class ShowOut(TypedDict):
    """An entry or a memory: ``kind`` says which of the two keys is set."""

    kind: str
    entry: EntryOut | None
    memory: MemoryOut | None


class SessionOut(TypedDict):
    """A session's manifest and statistics."""

    id: str
    user_id: str | None
    agent_ids: list[str]
    tags: list[str]
    metadata: dict[str, str]
    channel: str | None
    archived: bool
    started_at: str
    statistics: dict[str, Any]
    closed: bool
    closed_at: str | None


class SessionsOut(TypedDict):
    """Sessions, newest last."""

    sessions: list[SessionOut]


class TranscriptOut(TypedDict):
    """A page of a session's messages in the order they occurred, with the
    total and the next offset (None on the last page)."""

    session_id: str
    messages: list[EntryOut]
    total: int
    offset: int
    limit: int | None
    next_offset: int | None


class HitOut(TypedDict):
    """One search hit; a user memory has type ``memory``."""

    id: str
    type: str
    session_id: str | None
    content: str
    snippet: str
    score: float
    decay: float
    occurred_at: str
    recorded_at: str
    tags: list[str]
    agent_id: str | None


class RecallOut(TypedDict):
    """Search hits, best first."""

    results: list[HitOut]
    count: int


class SectionOut(TypedDict):
    """One section of a context block."""

    name: str
    tokens: int
    items: int
    removed: int
    cut: bool
    reserved: int


class ContextOut(TypedDict):
    """A context block within a token budget (``text`` goes into the prompt)."""

    text: str
    tokens: int
    budget: int
    sections: list[SectionOut]
    dropped: list[str]
    trimmed: list[str]
    truncated: bool


class RecoveryOut(TypedDict):
    """The newest valid checkpoint of the user (and agent): ``recovered`` is
    false and the rest null when there is none; else the context and the
    session's last messages read as of the checkpoint."""

    recovered: bool
    checkpoint_id: str | None
    session_id: str | None
    at: str | None
    model_id: str | None
    chat_id: str | None
    context: ContextOut | None
    messages: list[EntryOut]


class WrittenOut(TypedDict):
    """What a write recorded: the id it names and the seq of its last event."""

    id: str
    seq: int


class DeletionOut(TypedDict):
    """A deletion's outcome: ids, counts and the purge, never content."""

    request_id: str
    deleted: int
    ids: list[str]
    purged: bool
    verified: bool | None
    seq: int
    counts_by_kind: dict[str, int]
    dry_run: bool


class MemoryPageOut(TypedDict):
    """A page of the user's memories with the total and the next offset."""

    memories: list[MemoryOut]
    total: int
    offset: int
    limit: int | None
    next_offset: int | None


class HistoryItemOut(TypedDict):
    """One event that touched an item (content only while it still exists)."""

    seq: int
    type: str
    recorded_at: str
    actor: str
    what: str
    reason: str | None
    request_id: str | None
    content: str | None
    occurred_at: str | None


class HistoryOut(TypedDict):
    """Every event that touched an item, oldest first."""

    id: str
    events: list[HistoryItemOut]


class AsOfOut(TypedDict):
    """A read as of a point: one of ``entry``/``memory``, ``session``,
    ``results`` or ``memories`` is set, after what was asked."""

    seq: int
    entry: EntryOut | None
    memory: MemoryOut | None
    session: SessionOut | None
    results: list[HitOut] | None
    memories: list[MemoryOut] | None


def _builtins(value: object) -> dict[str, Any]:
    return cast(dict[str, Any], msgspec.to_builtins(value))


def entry_out(entry: EntryResult) -> EntryOut:
    """An entry result as builtins."""
    return cast(EntryOut, _builtins(entry))


def memory_out(memory: MemoryResult) -> MemoryOut:
    """A memory result as builtins."""
    return cast(MemoryOut, _builtins(memory))


def show_out(item: EntryResult | MemoryResult) -> ShowOut:
    """An entry or a memory, under its own key."""
    if isinstance(item, MemoryResult):
        return {"kind": "memory", "entry": None, "memory": memory_out(item)}
    return {"kind": "entry", "entry": entry_out(item), "memory": None}


def session_out(session: SessionResult) -> SessionOut:
    """A session result as builtins."""
    return cast(SessionOut, _builtins(session))


def transcript_out(page: TranscriptPage) -> TranscriptOut:
    """A transcript page as builtins."""
    return cast(TranscriptOut, _builtins(page))


def hit_out(hit: SearchResult) -> HitOut:
    """A search hit as builtins."""
    return cast(HitOut, _builtins(hit))


def context_out(block: ContextBlock) -> ContextOut:
    """A context block in the ``context --json`` shape."""
    return cast(ContextOut, block.to_dict())


def deletion_out(report: DeletionReport) -> DeletionOut:
    """A deletion report's ids, counts and purge outcome."""
    return {"request_id": report.request_id, "deleted": report.deleted, "ids": list(report.ids),
            "purged": report.purged, "verified": report.verified, "seq": report.seq,
            "counts_by_kind": dict(report.counts_by_kind), "dry_run": report.dry_run}


def history_item_out(item: HistoryItem) -> HistoryItemOut:
    """A history item as builtins (without the entry's other texts)."""
    data = _builtins(item)
    data.pop("texts", None)
    return cast(HistoryItemOut, data)


def recovery_out(found: Recovery | None) -> RecoveryOut:
    """A recovery (or its absence) as builtins."""
    if found is None:
        return {"recovered": False, "checkpoint_id": None, "session_id": None, "at": None,
                "model_id": None, "chat_id": None, "context": None, "messages": []}
    return {"recovered": True, "checkpoint_id": found.checkpoint_id, "session_id": found.session_id,
            "at": found.at, "model_id": found.model_id, "chat_id": found.chat_id,
            "context": context_out(found.context), "messages": [entry_out(m) for m in found.messages]}


class AgentOut(TypedDict):
    """One agent: its entries by kind, their total, its sessions, its last activity (ISO 8601)."""

    agent_id: str
    counts: dict[str, int]
    entries: int
    sessions: int
    last_activity: str | None


class AgentsOut(TypedDict):
    """The agents of the user's sessions, by id."""

    agents: list[AgentOut]


def agents_out(found: list[AgentResult]) -> AgentsOut:
    """Agents as builtins."""
    return {"agents": [cast(AgentOut, _builtins(a)) for a in found]}
