"""What the facade returns: plain, JSON-ready result structs.

Times are ISO 8601 strings in UTC; both ``occurred_at`` (the agent's world) and
``recorded_at`` (when memlog learned it) are given side by side.
"""

from __future__ import annotations

from typing import Any

import msgspec

from eventstore import DecisionDetails, format_micros
from projections import EntryView, MemoryView, SessionStats, SessionView, SupersededInfo, TombstoneInfo

__all__ = [
    "ContextBlock",
    "ContextSection",
    "DeletionReport",
    "EntryResult",
    "MemoryResult",
    "SearchResult",
    "SessionResult",
    "TranscriptPage",
    "absent_result",
    "entry_result",
    "memory_result",
    "session_result",
    "tombstone_dict",
]


class EntryResult(msgspec.Struct, frozen=True):
    """An entry as ``show`` gives it; ``content`` is None unless it is live."""

    id: str
    type: str
    state: str
    content: str | None
    session_id: str | None
    user_id: str | None = None
    agent_id: str | None = None
    role: str | None = None
    tags: tuple[str, ...] = ()
    importance: float | None = None
    details: dict[str, Any] = {}
    occurred_at: str | None = None
    recorded_at: str | None = None
    recorded_seq: int | None = None
    derived_from: tuple[str, ...] = ()
    redactions: dict[str, int] = {}
    deleted: dict[str, Any] | None = None
    redacted: dict[str, Any] | None = None
    superseded: dict[str, Any] | None = None  # by (id), seq and at: a later item of the same key


class DeletionReport(msgspec.Struct, frozen=True):
    """The outcome of a deletion: ids, counts and the purge, never content."""

    request_id: str
    deleted: int
    ids: tuple[str, ...]
    purged: bool
    seq: int
    erased_seqs: tuple[int, ...] = ()
    counts_by_kind: dict[str, int] = {}
    pending: bool = False
    verified: bool | None = None
    bytes_scanned: int = 0
    files_rewritten: tuple[str, ...] = ()
    seconds: dict[str, float] = {}
    checks: tuple[str, ...] = ()  # what the verification checked
    findings: tuple[str, ...] = ()  # where it found deleted content (file: hits), if anywhere
    action: str | None = None  # what was done about findings
    dry_run: bool = False  # a preview: nothing was written (request_id empty, seq the head it read)


class SearchResult(msgspec.Struct, frozen=True):
    """One search hit (DESIGN section 7's shape, plus the decay factor). A user
    memory (``source`` memories or both) has ``type`` ``"memory"``, its memory
    id as ``id``, no session, and its save time as both times."""

    id: str
    type: str
    session_id: str | None
    content: str
    snippet: str
    score: float
    decay: float
    occurred_at: str
    recorded_at: str
    tags: tuple[str, ...]
    agent_id: str | None = None


class SessionResult(msgspec.Struct, frozen=True):
    """A session manifest with seed 000's statistics."""

    id: str
    user_id: str | None
    agent_ids: tuple[str, ...]
    tags: tuple[str, ...]
    metadata: dict[str, str]
    channel: str | None
    archived: bool
    started_at: str
    statistics: dict[str, Any]
    closed: bool = False
    closed_at: str | None = None
    ephemeral: bool = False  # pruned by age and count


class TranscriptPage(msgspec.Struct, frozen=True):
    """One page of a session's messages, in the order they occurred."""

    session_id: str
    messages: list[EntryResult]
    total: int
    offset: int
    limit: int | None
    next_offset: int | None


class MemoryResult(msgspec.Struct, frozen=True):
    """A remembered fact."""

    id: str
    user_id: str
    key: str
    content: str | None
    state: str
    saved_at: str
    superseded: dict[str, Any] | None = None  # by (id), seq and at: a later save under the key
    session_id: str | None = None  # the session it was said in (``remember --session``)


class ContextSection(msgspec.Struct, frozen=True):
    """One section of a context block as printed: its tokens, how many items it
    shows, how many were left out to fit, whether an item was cut with an
    ellipsis, and the tokens its share of the budget kept for it."""

    name: str
    tokens: int
    text: str
    items: int = 0
    removed: int = 0
    cut: bool = False
    reserved: int = 0


class ContextBlock(msgspec.Struct, frozen=True):
    """A context block that fits a token budget: ``trimmed`` names the sections
    that lost items or had one cut to fit, ``dropped`` those left out whole."""

    text: str
    tokens: int
    budget: int
    sections: tuple[ContextSection, ...]
    dropped: tuple[str, ...] = ()
    truncated: bool = False
    trimmed: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The ``context --json`` shape: tokens per section, what was trimmed or dropped."""
        sections = [{"name": s.name, "tokens": s.tokens, "items": s.items, "removed": s.removed,
                     "cut": s.cut, "reserved": s.reserved} for s in self.sections]
        return {"text": self.text, "tokens": self.tokens, "budget": self.budget, "sections": sections,
                "dropped": list(self.dropped), "trimmed": list(self.trimmed),
                "truncated": self.truncated}


def tombstone_dict(tomb: TombstoneInfo) -> dict[str, Any]:
    """A tombstone as ids, reason and time."""
    return {"request_id": tomb.request_id, "reason": tomb.reason, "requested_by": tomb.requested_by,
            "seq": tomb.seq, "at": format_micros(tomb.at)}


def superseded_dict(info: SupersededInfo | None) -> dict[str, Any] | None:
    """What replaced an item: the superseding id, its seq and time."""
    return None if info is None else {"by": info.by, "seq": info.seq, "at": format_micros(info.at)}


def entry_result(view: EntryView) -> EntryResult:
    """An entry view as a result (no content unless live or redacted)."""
    entry = view.entry
    deleted = tombstone_dict(view.deleted) if view.deleted else None
    redacted = None
    if view.redacted is not None:
        r = view.redacted
        redacted = {"spans": dict(r.spans), "reason": r.reason, "requested_by": r.requested_by,
                    "seq": r.seq, "at": format_micros(r.at)}
    if entry is None:
        return EntryResult(id=view.entry_id, type=view.kind, state=view.state, content=None,
                           session_id=view.session_id, recorded_seq=view.recorded_seq,
                           deleted=deleted, redacted=redacted, superseded=superseded_dict(view.superseded))
    details = msgspec.to_builtins(entry.details) if entry.details is not None else {}
    details.pop("kind", None)
    if isinstance(entry.details, DecisionDetails):
        details["alternatives_considered"] = alternatives_considered(entry.details)
    return EntryResult(
        id=view.entry_id, type=view.kind, state=view.state, content=entry.content,
        session_id=entry.session_id, user_id=entry.user_id, agent_id=entry.agent_id, role=entry.role,
        tags=entry.tags, importance=entry.importance, details=details,
        occurred_at=format_micros(entry.occurred_at),
        recorded_at=format_micros(view.recorded_at) if view.recorded_at else None,
        recorded_seq=view.recorded_seq, derived_from=entry.derived_from,
        redactions=dict(entry.redactions), deleted=deleted, redacted=redacted,
        superseded=superseded_dict(view.superseded),
    )


def alternatives_considered(details: DecisionDetails) -> list[dict[str, str | None]]:
    """A decision's alternatives as seed 000 has them: ``{option, rejected_reason}``
    (None for an alternative recorded without a reason, as every one before reasons were kept)."""
    reasons = details.rejected_reasons
    return [{"option": option, "rejected_reason": reasons[i] if i < len(reasons) and reasons[i] else None}
            for i, option in enumerate(details.alternatives)]


def shown_details(details: dict[str, Any]) -> dict[str, Any]:
    """Details as a text shows them: a decision's alternatives each with its
    rejected reason (``OPTION (rejected: reason)``), in place of the lists they are kept in."""
    considered = details.get("alternatives_considered")
    if considered is None:
        return details
    shown = {k: v for k, v in details.items() if k not in ("rejected_reasons", "alternatives_considered")}
    shown["alternatives"] = [f"{a['option']} (rejected: {a['rejected_reason']})" if a["rejected_reason"]
                             else a["option"] for a in considered]
    return shown


def absent_result(current: EntryResult | MemoryResult) -> EntryResult:
    """What an as-of read answers for an id recorded after the point: state
    ``absent``, its type, and nothing else (DESIGN section 7)."""
    kind = current.type if isinstance(current, EntryResult) else "memory"
    return EntryResult(id=current.id, type=kind, state="absent", content=None, session_id=None)


def session_result(view: SessionView, stats: SessionStats) -> SessionResult:
    """A session view and its statistics as a result."""
    statistics = {
        "entries": stats.entries, "by_kind": dict(stats.counts), "size_bytes": stats.bytes,
        "total_messages": stats.counts.get("message", 0),
        "total_decisions": stats.counts.get("decision", 0),
        "total_findings": stats.counts.get("finding", 0),
        "last_activity": format_micros(stats.last_activity) if stats.last_activity else None,
    }
    return SessionResult(id=view.session_id, user_id=view.user_id, agent_ids=view.agent_ids,
                         tags=view.tags, metadata=dict(view.metadata), channel=view.channel,
                         archived=view.archived, started_at=format_micros(view.started_at),
                         statistics=statistics, closed=view.closed_at is not None,
                         closed_at=None if view.closed_at is None else format_micros(view.closed_at),
                         ephemeral=view.ephemeral)


def memory_result(view: MemoryView) -> MemoryResult:
    """A memory view as a result."""
    return MemoryResult(id=view.memory_id, user_id=view.user_id, key=view.key, content=view.content,
                        state=view.state, saved_at=format_micros(view.saved_at),
                        superseded=superseded_dict(view.superseded), session_id=view.session_id)
