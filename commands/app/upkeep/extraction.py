"""Memory that forms itself (seed 002): rule-based extraction of decisions and
lessons from a session's conversation, and the handoff a session leaves when
it closes.

- **Extraction.** The user's and the assistant's messages (the conversation:
  system and tool messages are left out) recorded since the session's last
  extraction are cut into lines; :func:`~commands.app.store.patterns.classify`
  says which line is a decision or a lesson (seed 002's patterns). Each one
  becomes an entry: the line (at most 300 characters), ``derived_from`` its
  message, actor ``memlog/extract``, tags ``auto-extract`` (and
  ``session-close`` on close) plus its ``#hashtags``, the message's agent (else
  the session's only agent). At most 10 decisions and 10 lessons a run; a line
  repeated in the run is taken once; a lesson goes through dedup
  (:mod:`commands.app.recording.dedup`).
- **Once.** The entries and ``session.extracted`` (the session, the last seq
  read, how many messages, the entry ids) are one transaction; the next run
  reads only messages recorded after that seq, so a second run writes nothing.
  A run with no new message writes nothing.
- **Handoff.** On close, the last 6 messages of the conversation, oldest
  first, one line each: ``[User]: text`` or ``[Agent]: text``, each text cut to
  200 characters; kind ``handoff``, tags ``auto-handoff`` and
  ``session-close``, ``derived_from`` those messages, actor ``memlog/extract``.
  No message, no handoff.
- **Close.** :func:`on_close` runs before ``session.closed`` is appended (a
  closed session takes no entries): the handoff (``handoff_on_close``), then
  extraction (``extract_on_close``), each on its own; a failure of either is
  logged (ids and error code) and the close goes on. Inside a caller's batch
  (importers) neither runs: the session is then in the extraction backlog.
- **Backlog.** :data:`extraction_step` (``memlog maintain``): closed sessions
  with messages not yet extracted, from a views index (no entry read).

Nothing here logs content: ids and counts only.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice
from typing import Any

import msgspec

from eventstore import (
    ConcurrencyError,
    DecisionDetails,
    EntryRecorded,
    MemlogError,
    SessionExtracted,
    SessionNotFoundError,
)
from projections import EntryView, SessionView, ViewReader, lesson_words

from .. import log as _log
from ..recording.dedup import jaccard
from ..recording.records import record
from ..store.entries import hashtags
from ..store.patterns import MAX_CHARS, MAX_PER_KIND, classify
from ..store.store import Store
from ..store.validate import check_id
from .maintain import Due, Step, StepContext

__all__ = [
    "AUTO_EXTRACT", "AUTO_HANDOFF", "AUTO_TAGS", "EXTRACT_ACTOR", "HANDOFF_CHARS", "HANDOFF_MESSAGES",
    "SESSION_CLOSE", "ExtractionReport", "Found", "extract_session",
    "extraction_step", "on_close", "plan", "write_handoff",
]

EXTRACT_ACTOR = "memlog/extract"
# The tags of what memlog writes by itself (a redaction of a source deletes those copies).
AUTO_EXTRACT, AUTO_HANDOFF, SESSION_CLOSE = "auto-extract", "auto-handoff", "session-close"
AUTO_TAGS = frozenset({AUTO_EXTRACT, AUTO_HANDOFF})
HANDOFF_MESSAGES = 6
HANDOFF_CHARS = 200
_ROLES = {"user": "User", "assistant": "Agent"}
_RETRIES = 5


class ExtractionReport(msgspec.Struct, frozen=True):
    """What an extraction did (or, dry, would do): ``decisions`` and ``lessons``
    are entry ids (a lesson that reinforced an existing one: that one's id),
    or in a dry run the ids of the messages they would come from. ``skipped``
    counts lines left out (``decisions_over_cap``, ``lessons_over_cap``,
    ``repeated``) and lessons that reinforced instead (``reinforced``). No content."""

    session_id: str
    decisions: tuple[str, ...] = ()
    lessons: tuple[str, ...] = ()
    skipped: dict[str, int] = {}
    messages: int = 0
    upto_seq: int = 0
    dry_run: bool = False
    events: int = 0
    seq: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``extract --json`` shape."""
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]


class Found(msgspec.Struct, frozen=True):
    """One line to extract: its kind, text (cut), message id, agent and hashtags."""

    kind: str
    text: str
    message_id: str
    agent_id: str | None
    hashtags: tuple[str, ...]


def plan(messages: Iterable[EntryView], agent_id: str | None = None,
         threshold: float = 0.8) -> tuple[list[Found], dict[str, int]]:
    """The lines of ``messages`` to extract (seed 002's rules), in order, and
    the counts of those left out; ``agent_id``: for messages without one."""
    found: list[Found] = []
    skipped: dict[str, int] = {}
    seen: set[str] = set()
    taken = {"decision": 0, "lesson": 0}
    for view in messages:
        entry = view.entry
        if entry is None or entry.role not in _ROLES:
            continue
        for line in entry.content.splitlines():
            text = " ".join(line.split())
            kind = classify(text)
            if kind is None:
                continue
            text = text[:MAX_CHARS]
            if text in seen or (kind == "lesson" and _near(found, text, threshold)):
                skipped["repeated"] = skipped.get("repeated", 0) + 1
                continue
            if taken[kind] >= MAX_PER_KIND:
                skipped[f"{kind}s_over_cap"] = skipped.get(f"{kind}s_over_cap", 0) + 1
                continue
            seen.add(text)
            taken[kind] += 1
            found.append(Found(kind, text, view.entry_id, entry.agent_id or agent_id, _hashtags(text)))
    return found, skipped


def _near(found: list[Found], text: str, threshold: float) -> bool:
    """Whether a lesson of this run is as close to ``text`` as dedup asks."""
    if threshold <= 0:
        return False
    words = lesson_words(text)
    return bool(words) and any(f.kind == "lesson" and jaccard(words, lesson_words(f.text)) >= threshold
                               for f in found)


def _hashtags(text: str) -> tuple[str, ...]:
    """``#tags`` of the line (:func:`.entries.hashtags`: seed 002's rule, in lower case)."""
    return hashtags(text)


def _sole_agent(session: SessionView) -> str | None:
    return session.agent_ids[0] if len(session.agent_ids) == 1 else None


def _pending(views: ViewReader, sid: str) -> tuple[SessionView, list[EntryView], int]:
    """The session, its shown messages recorded after its last extraction, and
    the seq this read covers (the views' checkpoint)."""
    session = views.session(sid)
    if session is None:
        raise SessionNotFoundError(f"session {sid} not found")
    upto = views.extracted_upto(sid)
    stored = [s for s in views.session_stored(sid, ("message",)) if s.recorded_seq > upto]
    return session, views.resolve(stored), views.checkpoint()


def extract_session(store: Store, session_id: str, *, dry_run: bool = False, trigger: str = "extract",
                    close: bool = False) -> ExtractionReport:
    """Extract decisions and lessons from the session's messages not extracted
    yet (any session: open, closed or archived); ``dry_run`` writes nothing."""
    sid = check_id(session_id, "session id")
    if not dry_run:
        store.check_writable("an extraction")
    for attempt in range(_RETRIES):
        with store.read() as views:
            session, messages, upto = _pending(views, sid)
        found, skipped = plan(messages, _sole_agent(session), store.settings.lesson_dedup_threshold)
        if dry_run or not messages:
            return _report(sid, found, skipped, len(messages), upto, dry_run)
        try:
            return _write(store, sid, found, skipped, (len(messages), upto), trigger, close)
        except ConcurrencyError:
            if attempt == _RETRIES - 1:
                raise
    raise AssertionError("unreachable")


def _report(sid: str, found: list[Found], skipped: dict[str, int], messages: int, upto: int,
            dry_run: bool) -> ExtractionReport:
    """What a dry run would extract (message ids), or that there is nothing new."""
    ids = {kind: tuple(f.message_id for f in found if f.kind == kind) for kind in ("decision", "lesson")}
    return ExtractionReport(sid, ids["decision"], ids["lesson"], skipped, messages, upto, dry_run)


def _entry(store: Store, sid: str, found: Found, close: bool) -> EntryRecorded:
    tags = (AUTO_EXTRACT, SESSION_CLOSE, *found.hashtags) if close else (AUTO_EXTRACT, *found.hashtags)
    details = DecisionDetails() if found.kind == "decision" else None
    return store.entries.build(found.kind, found.text, session_id=sid, agent_id=found.agent_id, tags=tags,
                               derived_from=(found.message_id,), details=details)


def _write(store: Store, sid: str, found: list[Found], skipped: dict[str, int], read: tuple[int, int],
           trigger: str, close: bool) -> ExtractionReport:
    """The entries (through :func:`record`: lessons may reinforce) and
    ``session.extracted``, in one transaction."""
    messages, upto = read
    entries = [_entry(store, sid, f, close) for f in found]
    with store.writer.batch():
        ids = [record(store, e, actor=EXTRACT_ACTOR) for e in entries]
        written = tuple(i for i, e in zip(ids, entries, strict=True) if i == e.entry_id)
        event = SessionExtracted(session_id=sid, upto_seq=upto, messages=messages, entry_ids=written,
                                 trigger=trigger)
        store.writer.append(f"session:{sid}", lambda: [event], EXTRACT_ACTOR)
    reinforced = len(entries) - len(written)
    if reinforced:
        skipped = {**skipped, "reinforced": reinforced}
    pairs = list(zip(ids, entries, strict=True))
    by_kind = {k: tuple(i for i, e in pairs if e.kind == k) for k in ("decision", "lesson")}
    _log.info("session extracted", session_id=sid, decisions=len(by_kind["decision"]),
              lessons=len(by_kind["lesson"]), reinforced=reinforced, trigger=trigger)
    return ExtractionReport(sid, by_kind["decision"], by_kind["lesson"], skipped, messages, upto,
                            events=len(entries) + 1, seq=store.writer.last_seq)


def write_handoff(store: Store, session_id: str) -> str | None:
    """Record the session's automatic handoff (its last 6 messages of the
    conversation); None when it has none, or when the session's newest
    handoff is the agent's own and occurred no earlier than those messages."""
    sid = check_id(session_id, "session id")
    with store.read() as views:
        session = views.session(sid)
        if session is None:
            raise SessionNotFoundError(f"session {sid} not found")
        newest = views.session_entries(sid, ("message",), newest_first=True)
        last = list(islice((v for v in newest if v.entry is not None and v.entry.role in _ROLES),
                           HANDOFF_MESSAGES))
        own = _own_handoff(views, sid)
    if not last or (own is not None and own >= last[0].occurred_at):
        return None  # no conversation, or the agent's own handoff is as new as all of it
    last.reverse()
    lines = [f"[{_ROLES[v.entry.role]}]: {' '.join(v.entry.content.split())[:HANDOFF_CHARS]}"
             for v in last if v.entry is not None and v.entry.role is not None]
    entry = store.entries.build("handoff", "\n".join(lines), session_id=sid, agent_id=_sole_agent(session),
                                tags=(AUTO_HANDOFF, SESSION_CLOSE),
                                derived_from=tuple(v.entry_id for v in last))
    return record(store, entry, actor=EXTRACT_ACTOR)


def _own_handoff(views: ViewReader, session_id: str) -> int | None:
    """When the session's newest handoff (by the time it occurred, as the
    context picks it) was written by an agent, not automatically: its time;
    None otherwise (no handoff, or an automatic one)."""
    for view in views.session_entries(session_id, ("handoff",), newest_first=True):
        if view.entry is not None:
            return None if AUTO_HANDOFF in view.entry.tags else view.occurred_at
    return None


def on_close(store: Store, session_id: str) -> None:
    """Before ``session.closed``: the handoff, then extraction (as the
    settings ask); a failure of either is logged and never stops the close."""
    settings = store.settings
    if store.read_only or store.writer.batching:
        return
    if settings.handoff_on_close:
        _guarded("handoff on close failed", session_id, lambda: write_handoff(store, session_id))
    if settings.extract_on_close:
        _guarded("extraction on close failed", session_id,
                 lambda: extract_session(store, session_id, trigger="close", close=True))


def _guarded(what: str, session_id: str, run: Any) -> None:
    try:
        run()
    except Exception as exc:  # the close must land: log ids and the code only
        code = exc.code if isinstance(exc, MemlogError) else type(exc).__name__
        _log.warning(what, session_id=session_id, code=code)


# -- the maintenance step (commands/app/upkeep.py's shape) --

def _due(store: Store, now: int) -> list[Due]:
    """Closed sessions with messages not yet extracted (the views' backlog index);
    none when ``extract_on_close`` is off (extraction is then by hand only)."""
    out: list[Due] = []
    if not store.settings.extract_on_close:
        return out
    with store.read() as views:
        for sid, count in views.extraction_backlog():
            session = views.session(sid)
            if session is not None and session.closed_at is not None:
                out.append(Due("extraction", sid, f"session {sid} closed with {count} messages not extracted",
                               items=count))
    return out


def _run(store: Store, due: Due, context: StepContext) -> int:
    return extract_session(store, due.target, trigger="maintain").events


extraction_step = Step(name="extraction", due=_due, run=_run)
