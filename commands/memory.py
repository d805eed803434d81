"""The ``MemoryLog`` facade: library calls that validate input and emit events.

Every write decides first (validation, redaction, state checks against the
views) and then appends with the stream's expected version; a concurrent
writer makes it decide again. Every read first brings the projections it needs
up to the log head.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import msgspec

from eventstore import (
    DecayApplied,
    EntriesAccessed,
    EntryChanges,
    EntryRecorded,
    EntryUpdated,
    EventLog,
    InvalidInputError,
    LogSettings,
    MemorySaved,
    NotFoundError,
    SessionArchived,
    SessionRestored,
    SessionStarted,
    VerifyResult,
    now_micros,
)
from projections import DEFAULT_RATES, Projections, SearchQuery

from . import _log
from ._entries import ROLES, STATUSES, EntryFactory, new_id
from ._privacy_api import PrivacyAPI
from ._search import find
from ._writer import Writer
from .audit import HistoryItem, PointInTime, history, resolve_point
from .redaction import Redactor
from .results import (
    EntryResult,
    MemoryResult,
    SearchResult,
    SessionResult,
    entry_result,
    memory_result,
    session_result,
)
from .settings import Settings, load_settings
from .validate import (
    check_choice,
    check_content,
    check_id,
    check_ids,
    check_key,
    check_labels,
    check_unit,
    to_time,
)

__all__ = ["MemoryLog"]

SORTS = ("relevance", "newest", "oldest")


class MemoryLog(Writer, PrivacyAPI):
    """A memlog store: ``with MemoryLog.open(path) as mem: ...``."""

    def __init__(self, data_dir: Path, settings: Settings) -> None:
        self.data_dir = data_dir
        self.settings = settings
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.log = EventLog.open(data_dir / "log", LogSettings(
            max_payload_bytes=settings.max_content_bytes * 4 + 65536, sync=settings.sync))
        try:
            self.proj = Projections(data_dir, self.log, shards=settings.search_shards, sync=settings.sync)
        except BaseException:
            self.log.close()
            raise
        redactor = None
        if settings.redact_on_ingest:
            redactor = Redactor(settings.redaction_patterns, settings.custom_redactions)
        self.entries = EntryFactory(settings.max_content_bytes, redactor)
        self.actor = settings.default_actor
        self._init_writes()

    @classmethod
    def open(cls, path: str | os.PathLike[str] = ".memlog", settings: Settings | None = None,
             **overrides: Any) -> Self:
        """Open (creating if missing) the store in directory ``path``."""
        data_dir = Path(path)
        return cls(data_dir, settings or load_settings(data_dir, overrides))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close projections and log."""
        self.proj.close()
        self.log.close()

    # -- sessions -----------------------------------------------------------

    def start_session(self, user_id: str | None = None, agent_ids: Iterable[str] = (),
                      tags: Iterable[str] = (), metadata: dict[str, str] | None = None,
                      channel: str | None = None, session_id: str | None = None) -> str:
        """Start a session; returns its id."""
        sid = check_id(session_id, "session id") if session_id else new_id("sess")
        meta = metadata or {}
        pairs = meta.items() if isinstance(meta, dict) else ()
        if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in pairs):
            raise InvalidInputError("metadata must map strings to strings")
        event = SessionStarted(
            session_id=sid, user_id=None if user_id is None else check_id(user_id, "user id"),
            agent_ids=check_ids(agent_ids, "agent ids"), tags=check_labels(tags, "tags"),
            metadata=dict(meta), channel=None if channel is None else check_labels([channel], "channel")[0],
        )
        with self._reader() as views:
            if views.session(sid) is not None or sid in self._pending_sessions:
                raise InvalidInputError(f"session {sid} already exists")
        self._append(f"session:{sid}", lambda: [event])
        if self._batch is not None:
            self._pending_sessions.add(sid)
        return sid

    def session(self, session_id: str) -> SessionResult:
        """A session's manifest and statistics."""
        sid = check_id(session_id, "session id")
        with self._reader() as views:
            view = views.session(sid)
            if view is None:
                raise NotFoundError(f"session {sid} not found", code="E_SESSION_NOT_FOUND")
            return session_result(view, views.session_stats(sid))

    def sessions(self, user_id: str | None = None, archived: bool | None = False) -> list[SessionResult]:
        """Sessions (not archived by default; ``archived=None`` for all)."""
        with self._reader() as views:
            return [session_result(v, views.session_stats(v.session_id)) for v in views.sessions()
                    if (user_id is None or v.user_id == user_id)
                    and (archived is None or v.archived == archived)]

    def archive_session(self, session_id: str, reason: str | None = None) -> None:
        """Archive a session: it leaves default search and context."""
        sid = self._live_session(session_id)
        self._append(f"session:{sid}", lambda: [SessionArchived(session_id=sid, reason=reason)])

    def restore_session(self, session_id: str) -> None:
        """Restore an archived session."""
        sid = check_id(session_id, "session id")
        with self._reader() as views:
            view = views.session(sid)
        if view is None:
            raise NotFoundError(f"session {sid} not found", code="E_SESSION_NOT_FOUND")
        if not view.archived:
            raise InvalidInputError(f"session {sid} is not archived")
        self._append(f"session:{sid}", lambda: [SessionRestored(session_id=sid)])

    # -- entries ------------------------------------------------------------

    def _record(self, entry: EntryRecorded, stream: str | None = None) -> str:
        target = stream or (f"session:{entry.session_id}" if entry.session_id else f"user:{entry.user_id}")
        self._append(target, lambda: [entry], keeps_live=True)
        _log.info("entry recorded", entry_id=entry.entry_id, kind=entry.kind, session_id=entry.session_id)
        return entry.entry_id

    def add_message(self, session_id: str, *, role: str, content: str, agent_id: str | None = None,
                    topic: str | None = None, parent_id: str | None = None, occurred_at: Any = None,
                    tags: Iterable[str] = (), importance: float | None = None) -> str:
        """Record a conversation message."""
        sid = self._live_session(session_id)
        details = self.entries.message(topic, parent_id)
        return self._record(self.entries.build(
            "message", content, session_id=sid, agent_id=agent_id, role=check_choice(role, "role", ROLES),
            tags=tags, importance=importance, occurred_at=occurred_at, details=details))

    def record_decision(self, session_id: str, *, decision: str, rationale: str | None = None,
                        alternatives: Iterable[str] = (), impact: str | None = None,
                        made_by: str | None = None, approved_by: Iterable[str] = (),
                        tags: Iterable[str] = (), occurred_at: Any = None,
                        derived_from: Iterable[str] = ()) -> str:
        """Record a decision (seed 000's fields)."""
        sid = self._live_session(session_id)
        details = self.entries.decision(rationale, alternatives, impact, made_by, approved_by)
        return self._record(self.entries.build(
            "decision", decision, session_id=sid, agent_id=made_by, tags=tags, occurred_at=occurred_at,
            derived_from=derived_from, details=details, field="decision"))

    def record_finding(self, session_id: str, *, description: str, severity: str | None = None,
                       category: str | None = None, evidence: str | None = None,
                       recommendation: str | None = None, status: str = "open",
                       tags: Iterable[str] = (), agent_id: str | None = None,
                       occurred_at: Any = None) -> str:
        """Record a finding (seed 000's fields)."""
        sid = self._live_session(session_id)
        details = self.entries.finding(severity, category, evidence, recommendation, status)
        return self._record(self.entries.build(
            "finding", description, session_id=sid, agent_id=agent_id, tags=tags,
            occurred_at=occurred_at, details=details, field="description"))

    def _simple(self, kind: str, session_id: str, content: str, **kwargs: Any) -> str:
        sid = self._live_session(session_id)
        return self._record(self.entries.build(kind, content, session_id=sid, **kwargs))

    def record_lesson(self, session_id: str, *, content: str, tags: Iterable[str] = (),
                      agent_id: str | None = None, occurred_at: Any = None,
                      derived_from: Iterable[str] = ()) -> str:
        """Record a lesson learned."""
        return self._simple("lesson", session_id, content, tags=tags, agent_id=agent_id,
                            occurred_at=occurred_at, derived_from=derived_from)

    def record_handoff(self, session_id: str, *, content: str, agent_id: str | None = None,
                       tags: Iterable[str] = (), occurred_at: Any = None,
                       derived_from: Iterable[str] = ()) -> str:
        """Record a handoff: what the next session should know."""
        return self._simple("handoff", session_id, content, tags=tags, agent_id=agent_id,
                            occurred_at=occurred_at, derived_from=derived_from)

    def record_summary(self, session_id: str, *, content: str, derived_from: Iterable[str] = (),
                       occurred_at: Any = None) -> str:
        """Record a summary of (part of) a session."""
        return self._simple("summary", session_id, content, derived_from=derived_from,
                            occurred_at=occurred_at)

    def add_task(self, session_id: str, *, content: str, tags: Iterable[str] = (),
                 agent_id: str | None = None, occurred_at: Any = None) -> str:
        """Add an open task."""
        return self._simple("task", session_id, content, tags=tags, agent_id=agent_id,
                            occurred_at=occurred_at, details=self.entries.task())

    def set_project_context(self, session_id: str, *, content: str, occurred_at: Any = None) -> str:
        """Record project context (stack, goals), injected into every context block."""
        return self._simple("project", session_id, content, occurred_at=occurred_at)

    def set_preference(self, user_id: str, *, key: str, value: str, category: str | None = None,
                       confidence: float | None = None, session_id: str | None = None) -> str:
        """Record a user-scoped preference."""
        uid = check_id(user_id, "user id")
        sid = None if session_id is None else self._live_session(session_id)
        details = self.entries.preference(key, value, category, confidence)
        return self._record(self.entries.build("preference", f"{details.key}: {details.value}",
                                               session_id=sid, user_id=uid, details=details),
                            stream=f"user:{uid}")

    def _change(self, entry_id: str, kinds: tuple[str, ...], changes: EntryChanges) -> None:
        eid = check_id(entry_id, "entry id")
        with self._reader() as views:
            view = views.entry(eid)
        if view is None or view.entry is None or view.state not in ("live", "redacted"):
            raise NotFoundError(f"entry {eid} not found", code="E_ENTRY_NOT_FOUND")
        if view.kind not in kinds:
            raise InvalidInputError(f"entry {eid} is a {view.kind}, not a {' or '.join(kinds)}")
        stream = f"session:{view.session_id}" if view.session_id else f"user:{view.user_id}"
        self._append(stream, lambda: [EntryUpdated(entry_id=eid, changes=changes)])

    def complete_task(self, task_id: str, done: bool = True) -> None:
        """Mark a task done (or open again)."""
        self._change(task_id, ("task",), EntryChanges(done=bool(done)))

    def update_finding(self, finding_id: str, *, status: str) -> None:
        """Change a finding's status."""
        check_choice(status, "status", STATUSES)
        self._change(finding_id, ("finding",), EntryChanges(status=status))  # type: ignore[arg-type]

    def set_importance(self, entry_id: str, importance: float) -> None:
        """Set an entry's importance (0 to 1)."""
        value = check_unit(importance, "importance")
        self._change(entry_id, tuple(DEFAULT_RATES), EntryChanges(importance=value))

    # -- user memories (seed 001) ---------------------------------------------

    def remember(self, user_id: str, key: str, content: str, session_id: str | None = None) -> str:
        """Remember ``content`` for a user under ``key`` (replacing an earlier one)."""
        uid, k = check_id(user_id, "user id"), check_key(key)
        text = check_content(content, "content", self.settings.max_content_bytes)
        counts: dict[str, int] = {}
        if self.entries.redactor is not None:
            text = self.entries.redactor.redact(text, counts)
        mid = new_id("mem")
        event = MemorySaved(user_id=uid, key=k, content=text, memory_id=mid,
                            session_id=None if session_id is None else check_id(session_id, "session id"),
                            redactions=counts)
        self._append(f"user:{uid}", lambda: [event])
        _log.info("memory saved", user_id=uid, memory_id=mid)
        return mid

    def memories(self, user_id: str) -> list[MemoryResult]:
        """A user's live memories, by key."""
        uid = check_id(user_id, "user id")
        with self._reader() as views:
            return [memory_result(m) for m in views.memories(uid)][: self.settings.max_user_memories]

    # -- reads --------------------------------------------------------------

    def show(self, item_id: str) -> EntryResult | MemoryResult:
        """An entry (live, redacted, deleted) or a memory, by id."""
        iid = check_id(item_id, "id")
        with self._reader() as views:
            view = views.entry(iid)
            if view is not None:
                return entry_result(view)
            memory = views.memory_by_id(iid)
            if memory is not None:
                return memory_result(memory)
        raise NotFoundError(f"no entry or memory with id {iid}", code="E_ENTRY_NOT_FOUND")

    def search(self, text: str = "", *, kinds: Iterable[str] | None = None, session_id: str | None = None,
               agent_ids: Iterable[str] | None = None, user_id: str | None = None,
               tags: Iterable[str] | None = None, since: Any = None, until: Any = None,
               limit: int = 10, sort: str = "relevance", min_relevance: float = 0.0,
               include_archived: bool = False, record_access: bool | None = None) -> list[SearchResult]:
        """Search entries (seed 000's query API); records the access unless switched off."""
        query = self.search_query(text, kinds, session_id, agent_ids, user_id, tags, since, until, limit,
                            sort, min_relevance)
        with self._reader(search=True) as views:
            if not include_archived and session_id is None and (archived := views.archived_sessions()):
                query = msgspec.structs.replace(query, exclude_sessions=archived)
            results = find(self.proj, views, query, None, now_micros())
        if results and (self.settings.record_access if record_access is None else record_access):
            ids = tuple(r.id for r in results)
            self._append("access", lambda: [EntriesAccessed(entry_ids=ids, at=now_micros())])
        return results

    def search_query(self, text: object, kinds: Iterable[str] | None, session_id: object,
                     agent_ids: Iterable[str] | None, user_id: object, tags: Iterable[str] | None,
                     since: Any, until: Any, limit: object, sort: object,
                     min_relevance: object) -> SearchQuery:
        """Validate search arguments into a :class:`SearchQuery` (nothing is read or written)."""
        if not isinstance(text, str) or len(text) > 1000:
            raise InvalidInputError("query text must be a string of at most 1000 characters")
        kinds_t = tuple(check_choice(k, "type", DEFAULT_RATES) for k in (kinds or ()))
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInputError(f"limit must be an integer from 1 to 1000 (got {limit!r})")
        check_choice(sort, "sort", SORTS)
        floor = check_unit(min_relevance, "min_relevance")
        if floor is None:
            raise InvalidInputError("min_relevance must be a number from 0 to 1")
        start, end = to_time(since, "since"), to_time(until, "until")
        if start is not None and end is not None and start > end:
            raise InvalidInputError("since is after until")
        return SearchQuery(
            text=text, kinds=kinds_t,
            session_id=None if session_id is None else check_id(session_id, "session id"),
            agent_ids=check_ids(agent_ids, "agent ids"),
            user_id=None if user_id is None else check_id(user_id, "user id"),
            tags=check_labels(tags, "tags"), since=start, until=end, limit=limit,
            sort=sort,  # type: ignore[arg-type]
            min_relevance=floor,
        )

    def context(self, session_id: str, query: str | None = None, budget_tokens: int | None = None,
                count_tokens: Callable[[str], int] | None = None) -> Any:
        """A context block for a prompt, within a token budget (see :mod:`commands.context`)."""
        from .context import build_context

        return build_context(self, session_id, query, budget_tokens or self.settings.context_budget_tokens,
                             count_tokens)

    # -- audit --------------------------------------------------------------

    def as_of(self, point: datetime | str | int) -> PointInTime:
        """Read-only reads as of a time (ISO 8601 / datetime) or a seq (int or "@N")."""
        return PointInTime(self, resolve_point(self, point))

    def history(self, item_id: str) -> list[HistoryItem]:
        """Every event that touched an entry, memory or session, oldest first."""
        return history(self, item_id)

    # -- maintenance --------------------------------------------------------

    def apply_decay(self, as_of: datetime | str | int | None = None,
                    rates: dict[str, float] | None = None, floor: float = 0.1) -> int:
        """Emit ``decay.applied``: the parameters in force from ``as_of`` on."""
        when = to_time(as_of, "as_of") or now_micros()
        merged = {**DEFAULT_RATES, **(rates or {})}
        for kind, rate in merged.items():
            check_choice(kind, "kind", DEFAULT_RATES)
            if isinstance(rate, bool) or not isinstance(rate, int | float) or rate < 0:
                raise InvalidInputError(f"decay rate for {kind} must be a number >= 0")
        value = check_unit(floor, "floor")
        self._append("system", lambda: [DecayApplied(as_of=when, rates=merged, floor=value or 0.0)])
        return self.last_seq

    def verify(self) -> VerifyResult:
        """Walk the log's hash chain."""
        return self.log.verify()

    def replay(self, until: int | None = None) -> int:
        """Rebuild every projection from the log."""
        return self.proj.replay(until=until)

    def stats(self) -> dict[str, Any]:
        """Event count, head seq, counts by kind, sizes on disk and checkpoints."""
        head = self.log.head()
        with self._reader() as views:
            counters = views.counters()
            checkpoint = views.checkpoint()
        assert self.proj.search_index is not None
        sizes = {"log": _dir_size(self.data_dir / "log"), "views": _dir_size(self.proj.root / "views"),
                 "search": _dir_size(self.proj.root / "search")}
        return {
            "events": head.seq, "head_seq": head.seq, "head_hash": head.hash,
            "entries": counters.get("entries", 0),
            "by_kind": {k[5:]: v for k, v in counters.items() if k.startswith("kind:")},
            "by_type": {k[5:]: v for k, v in counters.items() if k.startswith("type:")},
            "bytes_on_disk": sizes, "checkpoints": {"views": checkpoint,
                                                    "search": self.proj.search_index.checkpoint()},
        }


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0
