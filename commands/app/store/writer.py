"""The writer: decide, then append with the stream's expected version; batches;
the check that a session is live, cached per stream version."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import cast

from eventstore import (
    AppendRequest,
    ConcurrencyError,
    Event,
    EventLog,
    InvalidInputError,
    SessionArchivedError,
    SessionClosedError,
    SessionNotFoundError,
    SessionRestored,
)
from projections import Projections

from .. import log as _log
from ..metrics import METRICS
from .validate import check_id

__all__ = ["RESTORED_ON_WRITE", "SYSTEM_STREAM", "Writer"]

# the reason of an automatic restore by a write (seed 000)
RESTORED_ON_WRITE = "auto-restore: a write touched the archived session"

_RETRIES = 5
# The stream of deletions, redactions, purges, decay and retention: writes of no session.
SYSTEM_STREAM = "system"


class Writer:
    """Appends for one store: every use case writes through it."""

    def __init__(self, log: EventLog, proj: Projections, actor: str) -> None:
        self.log = log
        self.proj = proj
        self.actor = actor
        self.last_seq = 0
        self._batch: list[AppendRequest] | None = None
        self._batch_versions: dict[str, int] = {}
        self._pending_sessions: set[str] = set()
        # session id -> (session stream version, system stream version) at which
        # the views showed it live. Any event on either stream since (an archive,
        # a deletion, from any process) changes a version and forces a views check.
        self._live_at: dict[str, tuple[int, int]] = {}
        self._batch_live: dict[str, int] = {}  # stream -> version before its first batched entry
        self._batch_closed: set[str] = set()  # sessions closed in the current batch
        # restore an archived session a write touches (settings.auto_restore)
        self.auto_restore = False

    def append(self, stream: str, decide: Callable[[], list[Event]], actor: str | None = None,
                keeps_live: bool = False, *, event_ids: Sequence[str] | None = None) -> int:
        """Decide, then append with the stream's expected version; retry on a race.

        ``keeps_live`` marks events that cannot end a session (entries), so a
        cached liveness check of the stream's session stays valid after them.
        ``event_ids``: client event ids, one per decided event (importers).
        """
        who = actor or self.actor
        if self._batch is not None:
            events = decide()
            version = self._batch_versions.get(stream)
            if version is None:
                version = self.log.stream_version(stream)
            last = self._batch[-1] if self._batch else None
            if (last is not None and last.stream == stream and last.actor == who
                    and (last.event_ids is None) == (event_ids is None)):
                # Consecutive writes to one stream become one request: same
                # transaction, far less per-request work.
                cast(list[Event], last.events).extend(events)
                if event_ids is not None:
                    cast(list[str], last.event_ids).extend(event_ids)
            else:
                self._batch.append(AppendRequest(stream, list(events), who, version,
                                                 None if event_ids is None else list(event_ids)))
            self._batch_versions[stream] = version + len(events)
            if not keeps_live:
                self._batch_live[stream] = -1
            elif stream not in self._batch_live:
                self._batch_live[stream] = version
            return 0
        for attempt in range(_RETRIES):
            version = self.log.stream_version(stream)
            events = decide()
            try:
                with METRICS.timed("append"):
                    result = self.log.append(stream, events, actor=who, expected_version=version,
                                             event_ids=event_ids)
                METRICS.add("appends")
            except ConcurrencyError:
                if attempt == _RETRIES - 1:
                    raise
                continue
            self.last_seq = result.last_seq
            if keeps_live:
                self._still_live(stream, version, result.version)
            _log.debug("appended", stream=stream, seq=result.last_seq, events=len(events))
            return result.last_seq
        raise AssertionError("unreachable")

    def queued(self, stream: str) -> Iterator[Event]:
        """The events the current batch holds for ``stream``, in order (none
        outside a batch): what the views do not show yet."""
        for request in self._batch or ():
            if request.stream == stream:
                yield from request.events

    @property
    def batching(self) -> bool:
        """Whether writes are being collected for one transaction."""
        return self._batch is not None

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Many writes in one transaction (for importers): all land or none."""
        if self._batch is not None:
            raise InvalidInputError("batches do not nest")
        self._batch, self._batch_versions, self._pending_sessions = [], {}, set()
        self._batch_live, self._batch_closed = {}, set()
        try:
            yield
            if self._batch:
                with METRICS.timed("append"):
                    results = self.log.append_many(self._batch)
                METRICS.add("appends")
                self.last_seq = results[-1].last_seq
                for stream, before in self._batch_live.items():
                    if before >= 0:
                        self._still_live(stream, before, self._batch_versions[stream])
        finally:
            self._batch, self._batch_versions, self._pending_sessions = None, {}, set()
            self._batch_live, self._batch_closed = {}, set()

    def live_session(self, session_id: object, closed_ok: bool = False, restore: bool = True) -> str:
        """The id of a session that exists, is not archived and (unless
        ``closed_ok``) not closed, checked against the views (cached until its
        stream or the system stream moves). An archived session is restored
        first (``session.restored``) when ``auto_restore`` is on and ``restore``
        is not switched off (archiving it again); a read-only store refuses that write."""
        sid = check_id(session_id, "session id")
        if sid in self._batch_closed and not closed_ok:
            raise SessionClosedError(f"session {sid} is closed; start a new session")
        if sid in self._pending_sessions:
            return sid  # started in this batch, or already checked in it
        stamp = (self.log.stream_version(f"session:{sid}"), self.log.stream_version(SYSTEM_STREAM))
        if self._live_at.get(sid) != stamp:
            # The views are caught up to at least ``stamp`` when read.
            with self.proj.read() as views:
                view = views.session(sid)
            if view is None:
                raise SessionNotFoundError(f"session {sid} not found")
            if view.archived:
                self._restore(sid, view.closed_at is not None and not closed_ok, restore)
            if view.closed_at is not None:
                if closed_ok:
                    return sid  # not cached: the cache vouches for open sessions only
                raise SessionClosedError(f"session {sid} is closed; start a new session")
            self._live_at[sid] = stamp
        if self._batch is not None:
            self._pending_sessions.add(sid)
        return sid

    def _restore(self, sid: str, closed: bool, restore: bool) -> None:
        """Restore an archived session a write touches, or refuse the write
        (a write a closed session would refuse anyway restores nothing)."""
        if not (self.auto_restore and restore):
            raise SessionArchivedError(f"session {sid} is archived; restore it first")
        if closed:
            raise SessionClosedError(f"session {sid} is closed; start a new session")
        self.append(f"session:{sid}", lambda: [SessionRestored(session_id=sid, reason=RESTORED_ON_WRITE)])
        _log.info("archived session restored by a write", session_id=sid)

    def add_pending_session(self, session_id: str) -> None:
        """A session started in the current batch (live for its later writes)."""
        if self._batch is not None:
            self._pending_sessions.add(session_id)

    def end_pending_session(self, session_id: str) -> None:
        """A session closed in the current batch: its later writes are checked again."""
        self._pending_sessions.discard(session_id)
        self._live_at.pop(session_id, None)
        if self._batch is not None:
            self._batch_closed.add(session_id)

    def is_pending_session(self, session_id: str) -> bool:
        """Whether the current batch started (or already checked) this session."""
        return session_id in self._pending_sessions

    def _still_live(self, stream: str, before: int, after: int) -> None:
        """After an entry append at ``before`` -> ``after``, keep a live session cached."""
        sid = stream[8:] if stream.startswith("session:") else None
        stamp = self._live_at.get(sid) if sid else None
        if sid and stamp is not None and stamp[0] == before:
            self._live_at[sid] = (after, stamp[1])

