"""The ``MemoryLog`` facade: the library's calls, each a use case of
:mod:`commands.app` run on the facade's :class:`~commands.app.Store`.

Writes decide first (validation, redaction, state checks against the views)
and then append with the stream's expected version; a concurrent writer makes
them decide again. Reads first bring the projections they need up to the log
head.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self

from eventstore import EntryChanges, EntryRecorded, EventLog, ResourceSpec, VerifyResult
from projections import DecayParams, DeletionRecord, Embedder, Projections

from .app import (
    ContextBlock,
    DeletionReport,
    EntryResult,
    HistoryItem,
    MemoryResult,
    PointInTime,
    SearchResult,
    SessionResult,
    Settings,
    Store,
    TranscriptPage,
    audit,
    build_context,
    forgetting,
    health,
    load_settings,
    maintenance,
    purging,
    records,
    scope,
    search,
    sessions,
)
from .app.forgetting import shared_purge
from .app.recording.editing import edit_entry
from .app.store.settings import check_settings
from .app.store.validate import check_data_dir
from .app.upkeep import compaction, resource_declare, summaries
from .app.upkeep.compaction import CompactionReport
from .app.upkeep.resources import ResourceHandle
from .app.upkeep.summaries import SummaryReport
from .app.upkeep.summariser import ExtractiveSummariser, Summariser
from .faces import AgentsFace, FormationFace, MaintainFace, UpkeepFace

if TYPE_CHECKING:
    from .app.upkeep.watch import LifecycleWatch

if TYPE_CHECKING:  # import and export load their readers and writers when called
    from . import transfer

__all__ = ["MemoryLog"]


class MemoryLog(FormationFace, UpkeepFace, MaintainFace, AgentsFace):
    """A memlog store: ``with MemoryLog.open(path) as mem: ...``."""

    def __init__(self, data_dir: Path, settings: Settings, *, create: bool = True,
                 embedder: Embedder | Literal["default"] | None = "default", read_only: bool = False,
                 summariser: Summariser | None = None, log: str | None = None) -> None:
        """``embedder``: the model of semantic search (bring your own: see
        :class:`projections.embed.Embedder`); ``"default"`` is the shipped one
        when numpy is installed; None (or ``semantic=False``): text search only.
        ``read_only``: the store must exist; every write raises
        :class:`~eventstore.ReadOnlyError` (``E_READ_ONLY``) and writes nothing,
        and reads record no accesses.
        ``summariser``: texts -> text, for every summary memlog writes (compaction,
        session summaries, re-summaries); default :class:`~commands.app.ExtractiveSummariser`.
        ``log``: where the event log lives when not in ``data_dir``: a shared
        ``nats://host:port[,...]/<stream>`` log (each host keeps its own
        projections in ``data_dir``, caught up from the shared log)."""
        check_settings(settings)
        check_data_dir(data_dir, write=create and not read_only)
        self.store = Store(data_dir, settings, create=create, embedder=embedder, read_only=read_only,
                           log=log)
        try:
            # Before any other work: finish every purge a crash interrupted (a
            # read-only store leaves that to the next writer).
            self.recovered: list[DeletionReport] = (
                [] if read_only else purging.finish_interrupted(self.store))
            shared_purge.purge_shared(self.store)  # a shared log: deletions other hosts made
        except BaseException:
            self.store.close()
            raise
        self.summariser: Summariser = summariser or ExtractiveSummariser()
        # The check on write (compaction, session summaries) starts with the first write.
        self._lifecycle: LifecycleWatch | None = None
        self.store.on_recorded = shared_purge.on_write(self.store, self._recorded)

    @property
    def lifecycle(self) -> LifecycleWatch:
        """The check on write: compaction and session summaries, made at the first write."""
        if self._lifecycle is None:
            from .app.upkeep.watch import LifecycleWatch

            self._lifecycle = LifecycleWatch(self.store, self.summariser)
        return self._lifecycle

    def _recorded(self, entry: EntryRecorded) -> None:
        self.lifecycle.recorded(entry)

    @classmethod
    def open(cls, path: str | os.PathLike[str] = ".memlog", settings: Settings | None = None, *,
             create: bool = True, embedder: Embedder | Literal["default"] | None = "default",
             read_only: bool = False, summariser: Summariser | None = None, log: str | None = None,
             **overrides: Any) -> Self:
        """Open the store in directory ``path``, creating it unless ``create=False``
        (then a directory without a store raises :class:`~eventstore.StoreNotFoundError`);
        ``read_only=True`` refuses every write with :class:`~eventstore.ReadOnlyError`."""
        data_dir = Path(path)
        return cls(data_dir, settings or load_settings(data_dir, overrides), create=create,
                   embedder=embedder, read_only=read_only, summariser=summariser, log=log)

    @property
    def read_only(self) -> bool:
        """Whether this store refuses writes."""
        return self.store.read_only

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close projections and log."""
        self.store.close()

    @property
    def data_dir(self) -> Path:
        """The store's data directory."""
        return self.store.data_dir

    @property
    def settings(self) -> Settings:
        """The settings in force."""
        return self.store.settings

    @property
    def log(self) -> EventLog:
        """The store's event log (for audit tooling: ``mem.log.verify()``, ``read``)."""
        return self.store.log

    @property
    def proj(self) -> Projections:
        """The store's projections."""
        return self.store.proj

    @property
    def last_seq(self) -> int:
        """The seq of this handle's last append (0 before any)."""
        return self.store.writer.last_seq

    @contextlib.contextmanager
    def batch(self) -> Iterator[Self]:
        """Many writes in one transaction (for importers): all land or none."""
        with self.store.writer.batch():
            yield self
        if self._lifecycle is not None:  # a batch that recorded no entry has nothing to check
            self._lifecycle.after_batch()

    # -- sessions -----------------------------------------------------------

    def start_session(self, user_id: str | None = None, agent_ids: Iterable[str] = (),
                      tags: Iterable[str] = (), metadata: dict[str, str] | None = None,
                      channel: str | None = None, session_id: str | None = None,
                      ephemeral: bool = False) -> str:
        """Start a session; returns its id. ``ephemeral``: pruned by age and count."""
        return sessions.start_session(self.store, user_id, agent_ids, tags, metadata, channel, session_id,
                                      ephemeral=ephemeral)

    def session(self, session_id: str) -> SessionResult:
        """A session's manifest and statistics."""
        return sessions.session(self.store, session_id)

    def sessions(self, user_id: str | None = None, archived: bool | None = False) -> list[SessionResult]:
        """Sessions (not archived by default; ``archived=None`` for all)."""
        return sessions.sessions(self.store, user_id, archived)

    def archive_session(self, session_id: str, reason: str | None = None) -> None:
        """Archive a session: it leaves default search and context."""
        sessions.archive_session(self.store, session_id, reason)

    def restore_session(self, session_id: str) -> None:
        """Restore an archived session."""
        sessions.restore_session(self.store, session_id)

    def close_session(self, session_id: str, reason: str | None = None) -> None:
        """Close a session: it takes no new entries and stays readable."""
        sessions.close_session(self.store, session_id, reason)

    def update_session(self, session_id: str, *, agent_ids: Iterable[str] | None = None,
                       tags: Iterable[str] | None = None,
                       metadata: dict[str, str] | None = None) -> SessionResult:
        """Replace a session's agents or tags, or merge into its metadata."""
        sessions.update_session(self.store, session_id, agent_ids=agent_ids, tags=tags, metadata=metadata)
        return sessions.session(self.store, session_id)

    def transcript(self, session_id: str, *, limit: int | None = 50, offset: int = 0) -> TranscriptPage:
        """A session's messages in the order they occurred, a page at a time."""
        return sessions.transcript(self.store, session_id, limit, offset)

    # -- entries ------------------------------------------------------------

    def add_message(self, session_id: str, *, role: str, content: str, agent_id: str | None = None,
                    topic: str | None = None, parent_id: str | None = None, occurred_at: Any = None,
                    tags: Iterable[str] = (), importance: float | None = None,
                    tool_call_id: str | None = None) -> str:
        """Record a conversation message (``tool_call_id``: the call a tool message answers)."""
        return records.record_message(self.store, session_id, role=role, content=content,
                                      agent_id=agent_id, topic=topic, parent_id=parent_id,
                                      occurred_at=occurred_at, tags=tags, importance=importance,
                                      tool_call_id=tool_call_id)

    def record_decision(self, session_id: str, *, decision: str, rationale: str | None = None,
                        alternatives: Iterable[str | Mapping[str, str | None]] = (),
                        impact: str | None = None,
                        made_by: str | None = None, approved_by: Iterable[str] = (),
                        tags: Iterable[str] = (), occurred_at: Any = None,
                        derived_from: Iterable[str] = ()) -> str:
        """Record a decision (seed 000's fields); an alternative is an option, or
        ``{"option": ..., "rejected_reason": ...}`` (shown as ``details.alternatives_considered``)."""
        return records.record_decision(self.store, session_id, decision=decision, rationale=rationale,
                                       alternatives=alternatives, impact=impact, made_by=made_by,
                                       approved_by=approved_by, tags=tags, occurred_at=occurred_at,
                                       derived_from=derived_from)

    def record_finding(self, session_id: str, *, description: str, severity: str | None = None,
                       category: str | None = None, evidence: str | None = None,
                       recommendation: str | None = None, status: str = "open",
                       tags: Iterable[str] = (), agent_id: str | None = None,
                       occurred_at: Any = None) -> str:
        """Record a finding (seed 000's fields)."""
        return records.record_finding(self.store, session_id, description=description, severity=severity,
                                      category=category, evidence=evidence, recommendation=recommendation,
                                      status=status, tags=tags, agent_id=agent_id, occurred_at=occurred_at)

    def record_lesson(self, session_id: str, *, content: str, tags: Iterable[str] = (),
                      agent_id: str | None = None, occurred_at: Any = None,
                      derived_from: Iterable[str] = ()) -> str:
        """Record a lesson learned."""
        return records.record_kind(self.store, "lesson", session_id, content, tags=tags, agent_id=agent_id,
                                   occurred_at=occurred_at, derived_from=derived_from)

    def record_handoff(self, session_id: str, *, content: str, agent_id: str | None = None,
                       tags: Iterable[str] = (), occurred_at: Any = None,
                       derived_from: Iterable[str] = ()) -> str:
        """Record a handoff: what the next session should know."""
        return records.record_kind(self.store, "handoff", session_id, content, tags=tags, agent_id=agent_id,
                                   occurred_at=occurred_at, derived_from=derived_from)

    def record_summary(self, session_id: str, *, content: str, derived_from: Iterable[str] = (),
                       occurred_at: Any = None) -> str:
        """Record a summary of (part of) a session."""
        return records.record_kind(self.store, "summary", session_id, content, derived_from=derived_from,
                                   occurred_at=occurred_at)

    def add_task(self, session_id: str, *, content: str, tags: Iterable[str] = (),
                 agent_id: str | None = None, occurred_at: Any = None) -> str:
        """Add an open task."""
        return records.record_kind(self.store, "task", session_id, content, tags=tags, agent_id=agent_id,
                                   occurred_at=occurred_at)

    def set_project_context(self, session_id: str | None, *, content: str, occurred_at: Any = None) -> str:
        """Record project context (stack, goals): in a session, seen by its user's
        sessions of the same project; with ``session_id`` None, shared by every
        session of the store (see :mod:`commands.app.recall.context`)."""
        return records.record_project(self.store, session_id, content, occurred_at)

    def set_preference(self, user_id: str, *, key: str, value: str, category: str | None = None,
                       confidence: float | None = None, session_id: str | None = None) -> str:
        """Record a user-scoped preference."""
        return records.set_preference(self.store, user_id, key=key, value=value, category=category,
                                      confidence=confidence, session_id=session_id)

    def complete_task(self, task_id: str, done: bool = True) -> None:
        """Mark a task done (or open again)."""
        records.change_entry(self.store, task_id, ("task",), EntryChanges(done=bool(done)))

    def edit(self, entry_id: str, *, content: str) -> int:
        """Replace a shown entry's text (ingest redaction and the content limit
        apply); earlier texts stay in ``history`` and as-of reads. Returns the
        seq of its ``entry.edited``."""
        return edit_entry(self.store, entry_id, content)

    def update_finding(self, finding_id: str, *, status: str) -> None:
        """Change a finding's status."""
        records.update_finding(self.store, finding_id, status)

    def set_importance(self, entry_id: str, importance: float) -> None:
        """Set an entry's importance (0 to 1)."""
        records.set_importance(self.store, entry_id, importance)

    # -- user memories (seed 001) ---------------------------------------------

    def remember(self, user_id: str, key: str, content: str, session_id: str | None = None) -> str:
        """Remember ``content`` for a user under ``key`` (replacing an earlier one)."""
        return records.remember(self.store, user_id, key, content, session_id)

    def memories(self, user_id: str, *, limit: int | None = None, offset: int = 0) -> list[MemoryResult]:
        """A user's live memories, by key: all of them, or ``limit`` from ``offset``
        (:meth:`memory_page` tells the total)."""
        return records.memory_page(self.store, user_id, limit, offset).memories

    def memory_page(self, user_id: str, *, limit: int | None = 50, offset: int = 0) -> records.MemoryPage:
        """A page of a user's live memories, by key, with the total and the next offset."""
        return records.memory_page(self.store, user_id, limit, offset)

    # -- reads --------------------------------------------------------------

    def show(self, item_id: str) -> EntryResult | MemoryResult:
        """An entry (live, redacted, deleted) or a memory, by id."""
        return records.show(self.store, item_id)

    def search(self, text: str = "", *, kinds: Iterable[str] | None = None, session_id: str | None = None,
               agent_ids: Iterable[str] | None = None, user_id: str | None = None,
               tags: Iterable[str] | None = None, since: Any = None, until: Any = None,
               limit: int = 10, sort: str = "relevance", min_relevance: float = 0.0,
               include_archived: bool = False, record_access: bool | None = None,
               agent_id: str | None = None, source: str | None = None,
               mode: str | None = None, statuses: Iterable[str] | None = None,
               severities: Iterable[str] | None = None, topic: str | None = None) -> list[SearchResult]:
        """Search entries and/or memories (seed 000's query API); records the access
        unless switched off.

        ``user_id`` and ``agent_id`` scope the search to what that user or agent
        may see (:mod:`commands.app.recall.scope`): a user's own entries and sessions,
        their memories and preferences, and the shared project context; never
        another user's. Archived sessions stay out unless ``include_archived``.
        ``agent_ids`` keeps only entries written by those agents. ``source``:
        ``entries``, ``memories`` or ``both``; by default ``both`` when
        ``user_id`` is given, else ``entries``; ``mode``: ``text``, ``semantic``,
        ``hybrid`` or None (hybrid when an embedder is installed, else text).
        ``statuses`` and ``severities`` keep the findings with one of them; ``topic``
        keeps only messages of that topic.
        """
        query = search.make_query(text, kinds, session_id, agent_ids, None, tags, since, until, limit,
                                  sort, min_relevance, include_archived,
                                  source=scope.default_source(source, user_id), mode=mode, topic=topic)
        query = scope.scoped_query(self.store, search.with_findings(query, statuses, severities),
                                   user_id, agent_id)
        return search.search(self.store, query, record_access)

    def context(self, session_id: str, query: str | None = None, budget_tokens: int | None = None,
                count_tokens: Callable[[str], int] | None = None, face: str = "cli") -> ContextBlock:
        """A context block for a prompt, within a token budget (see :mod:`commands.app.recall.context`);
        ``face`` (cli or mcp): how its closing instruction says to save to memory."""
        return build_context(self.store, session_id, query, budget_tokens, count_tokens, face=face)

    # -- audit --------------------------------------------------------------

    def as_of(self, point: datetime | str | int) -> PointInTime:
        """Read-only reads as of a time (ISO 8601 / datetime) or a seq (int or "@N")."""
        return PointInTime(self.store, self.store.log.resolve_point(point))

    def history(self, item_id: str) -> list[HistoryItem]:
        """Every event that touched an entry, memory or session, oldest first."""
        return audit.history(self.store, item_id)

    # -- forgetting ---------------------------------------------------------

    def delete(self, *, ids: Iterable[str] | None = None, session_id: str | None = None,
               user_id: str | None = None, kinds: Iterable[str] | None = None,
               tags: Iterable[str] | None = None, before: Any = None, after: Any = None,
               reason: str, requested_by: str, include_derived: bool = True,
               defer: bool = False, resummarise: bool | None = None,
               dry_run: bool = False) -> DeletionReport:
        """Delete what every criterion given selects together; then purge (unless deferred).

        Ids alone, or a scope (a session, a user, both, or else the whole
        store) that kinds, tags, before and after each narrow; a scope without
        filters goes whole (a session with its manifest, a user with every
        session and memory). A combination that cannot mean one selection (ids
        with other criteria) is refused with ``E_SCHEMA_INVALID``, writing
        nothing. ``dry_run=True`` writes nothing and reports the ids that would
        go (``dry_run`` set, ``request_id`` empty).

        Entries derived from a deleted one (``derived_from``) go too, unless
        ``include_derived=False``; a summary that went with a source is written
        again from the sources that remain unless ``resummarise=False`` (default:
        the ``resummarise_on_delete`` setting; see :mod:`commands.app.upkeep.summaries`).
        """
        return summaries.delete(
            self.store, self.summariser, resummarise=resummarise, ids=ids, session_id=session_id,
            user_id=user_id, kinds=kinds, tags=tags, before=before, after=after, reason=reason,
            requested_by=requested_by, include_derived=include_derived, defer=defer, dry_run=dry_run)

    def forget(self, user_id: str, key: str, requested_by: str | None = None) -> DeletionReport:
        """Forget a user memory by key, through the deletion pipeline (every saved version)."""
        return forgetting.forget(self.store, user_id, key, requested_by)

    def redact(self, entry_id: str, *, patterns: Iterable[str] | None = None,
               regex: str | None = None, reason: str, requested_by: str,
               defer: bool = False) -> DeletionReport:
        """Remove spans (email, api_key, password, or a regex) from every text of an entry, for
        good; the summaries derived from it are deleted and written again from the redacted text."""
        report = forgetting.redact(self.store, entry_id, patterns=patterns, regex=regex, reason=reason,
                                   requested_by=requested_by, defer=defer)
        summaries.after_redaction(self.store, self.summariser, entry_id, requested_by, defer)
        return report

    def retention(self, as_of: Any = None, days: dict[str, int] | None = None,
                  defer: bool = False) -> DeletionReport | None:
        """Apply per-kind retention (days) as deletions with the reason "retention"."""
        return forgetting.retention(self.store, as_of, days, defer)

    def retention_due(self, as_of: Any = None, days: dict[str, int] | None = None) -> dict[str, str]:
        """What :meth:`retention` would delete now: entry id -> kind (a dry run; writes nothing)."""
        return forgetting.retention_due(self.store, as_of, days)

    def purge(self) -> DeletionReport | None:
        """Run every deferred purge now; None when nothing is pending. On a shared
        log, first purge this host's projections of deletions other hosts made."""
        shared_purge.purge_shared(self.store)
        return forgetting.purge(self.store)

    def deletions(self) -> list[DeletionRecord]:
        """The deletion ledger: every request, its tombstone and its purge."""
        return forgetting.deletions(self.store)

    # -- maintenance --------------------------------------------------------

    def apply_decay(self, as_of: datetime | str | int | None = None,
                    rates: dict[str, float] | None = None, floor: float | None = None) -> int:
        """Emit ``decay.applied``: the given rates (and floor) change, the rest stay."""
        return maintenance.apply_decay(self.store, as_of, rates, floor)

    def decay_params(self) -> DecayParams:
        """The decay parameters in force."""
        return maintenance.decay_params(self.store)

    def verify(self) -> VerifyResult:
        """Walk the log's hash chain."""
        return maintenance.verify(self.store)

    def replay(self, projections: Iterable[str] = maintenance.PROJECTIONS,
               progress: Callable[[int], None] | None = None) -> int:
        """Rebuild projections from the log (both by default; ``["search"]`` alone)."""
        return maintenance.replay(self.store, projections, progress)

    def stats(self) -> dict[str, Any]:
        """Event count, head seq, counts by kind, sizes on disk, checkpoints, and
        the purges that wait (deferred) or run in another process."""
        return {**maintenance.stats(self.store), "purges": self.pending_purges()}

    def health(self, tail: int = health.TAIL) -> dict[str, Any]:
        """The store's health report: head, tail verify, lag, sizes, the last
        purge, compaction and flush, pending work (never content)."""
        return health.health(self.store, tail)

    def metrics(self) -> str:
        """Prometheus text: the store's counts, sizes and lag, this process's latencies."""
        return health.metrics_text(self.store)

    # -- import and export ----------------------------------------------------

    def import_from(self, fmt: str, path: str | os.PathLike[str], *, dry_run: bool = False,
                    skip_bad: bool = False) -> transfer.ImportReport:
        """Import memory kept in ``fmt`` (bmad, picobot, aiteam, gimli, jsonl) from ``path``;
        see ``docs/integrations.md``. Ids derive from the source's: a second import adds nothing."""
        from . import transfer
        source = Path(path)
        recs = transfer.read_source(fmt, source)
        transfer.refuse_unreadable(recs, skip_bad)
        report = transfer.ingest(self.store, fmt, recs, skip_bad=skip_bad, dry_run=dry_run)
        if not dry_run:
            transfer.after_import(fmt, source)
        return report

    def export(self, fmt: Literal["jsonl", "markdown"] = "jsonl", *, user_id: str | None = None,
               session_id: str | None = None, as_of: datetime | str | int | None = None) -> Iterator[str]:
        """The store (or a user's or a session's part of it, as of a point) as JSONL
        lines (``import_from("jsonl", ...)`` reads them back) or markdown; never deleted content."""
        from . import transfer
        point = None if as_of is None else self.log.resolve_point(as_of)
        write = transfer.export_markdown if fmt == "markdown" else transfer.export_jsonl
        return write(self.store, user_id=user_id, session_id=session_id, as_of=point)

    def pending_purges(self) -> dict[str, int]:
        """How many purges wait for ``memlog purge`` and how many run elsewhere."""
        return purging.pending_purges(self.store)

    # -- compaction and summaries -------------------------------

    def compact(self, session_id: str | None = None, *, dry_run: bool = False) -> list[CompactionReport]:
        """Compact one session now, or every session at or over 90% of its size
        limit (seed 000; see :mod:`commands.app.upkeep.compaction`)."""
        return compaction.compact(self.store, self.summariser, session_id, dry_run)

    def summarise(self, session_id: str, *, force: bool = False) -> SummaryReport:
        """Summarise a session's oldest messages past the token threshold, keeping
        the last ones (seed 001; ``force``: whatever the tokens; see :mod:`commands.app.upkeep.summaries`)."""
        return summaries.summarise_session(self.store, self.summariser, session_id, force)

    def sessions_over_limit(self) -> list[tuple[str, int]]:
        """(session id, bytes) of the sessions at or over their size limit."""
        return compaction.sessions_over(self.store, self.settings.session_limit_bytes)

    # -- memory resources --

    def declare_resource(self, spec: ResourceSpec | Mapping[str, Any]) -> ResourceSpec:
        """Declare a token-managed memory resource (``resource.declared``; see
        docs/lifecycle.md (Memory resources)); declaring an id again replaces its spec."""
        return resource_declare.declare(self.store, spec)

    def resources(self) -> list[ResourceSpec]:
        """Every resource in force (``config.toml``'s and the declared ones), by id."""
        return resource_declare.declared(self.store)

    def resource(self, resource_id: str, *, user_id: str | None = None, session_id: str | None = None,
                 agent_id: str | None = None, summariser: Summariser | None = None) -> ResourceHandle:
        """The handle of one resource instance: the key template filled with these ids;
        flushes summarise with ``summariser`` (default: the store's, else the extractive one)."""
        return ResourceHandle(self.store, resource_id, user_id=user_id, session_id=session_id,
                              agent_id=agent_id,
                              summariser=summariser or self.summariser)
