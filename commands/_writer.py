"""The write half of the facade: decide, then append with the stream's expected
version; batches; the check that a session is live, cached per stream version."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Self, cast

from eventstore import (
    AppendRequest,
    ConcurrencyError,
    Event,
    EventLog,
    InvalidInputError,
    NotFoundError,
    SessionArchivedError,
)
from projections import Projections, ViewReader

from . import _log
from .validate import check_id

__all__ = ["Writer"]

_RETRIES = 5


class Writer:
    """Mixed into :class:`~commands.memory.MemoryLog`."""

    log: EventLog
    proj: Projections
    actor: str
    last_seq: int

    def _init_writes(self) -> None:
        self.last_seq = 0
        self._batch: list[AppendRequest] | None = None
        self._batch_versions: dict[str, int] = {}
        self._pending_sessions: set[str] = set()
        # session id -> (session stream version, system stream version) at which
        # the views showed it live. Any event on either stream since (an archive,
        # a deletion, from any process) changes a version and forces a views check.
        self._live_at: dict[str, tuple[int, int]] = {}
        self._batch_live: dict[str, int] = {}  # stream -> version before its first batched entry

    def _append(self, stream: str, decide: Callable[[], list[Event]], actor: str | None = None,
                keeps_live: bool = False) -> int:
        """Decide, then append with the stream's expected version; retry on a race.

        ``keeps_live`` marks events that cannot end a session (entries), so a
        cached liveness check of the stream's session stays valid after them.
        """
        who = actor or self.actor
        if self._batch is not None:
            events = decide()
            version = self._batch_versions.get(stream)
            if version is None:
                version = self.log.stream_version(stream)
            last = self._batch[-1] if self._batch else None
            if last is not None and last.stream == stream and last.actor == who:
                # Consecutive writes to one stream become one request: same
                # transaction, far less per-request work.
                cast(list[Event], last.events).extend(events)
            else:
                self._batch.append(AppendRequest(stream, list(events), who, version))
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
                result = self.log.append(stream, events, actor=who, expected_version=version)
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

    @contextlib.contextmanager
    def batch(self) -> Iterator[Self]:
        """Many writes in one transaction (for importers): all land or none."""
        if self._batch is not None:
            raise InvalidInputError("batches do not nest")
        self._batch, self._batch_versions, self._pending_sessions = [], {}, set()
        self._batch_live = {}
        try:
            yield self
            if self._batch:
                results = self.log.append_many(self._batch)
                self.last_seq = results[-1].last_seq
                for stream, before in self._batch_live.items():
                    if before >= 0:
                        self._still_live(stream, before, self._batch_versions[stream])
        finally:
            self._batch, self._batch_versions, self._pending_sessions = None, {}, set()
            self._batch_live = {}

    def _reader(self, as_of: int | None = None,
                search: bool = False) -> contextlib.AbstractContextManager[ViewReader]:
        return self.proj.read(as_of, search=search)

    def _live_session(self, session_id: object) -> str:
        sid = check_id(session_id, "session id")
        if sid in self._pending_sessions:
            return sid  # started in this batch, or already checked in it
        stamp = (self.log.stream_version(f"session:{sid}"), self.log.stream_version("system"))
        if self._live_at.get(sid) != stamp:
            # The views are caught up to at least ``stamp`` when read.
            with self._reader() as views:
                view = views.session(sid)
            if view is None:
                raise NotFoundError(f"session {sid} not found", code="E_SESSION_NOT_FOUND")
            if view.archived:
                raise SessionArchivedError(f"session {sid} is archived; restore it first")
            self._live_at[sid] = stamp
        if self._batch is not None:
            self._pending_sessions.add(sid)
        return sid

    def _still_live(self, stream: str, before: int, after: int) -> None:
        """After an entry append at ``before`` -> ``after``, keep a live session cached."""
        sid = stream[8:] if stream.startswith("session:") else None
        stamp = self._live_at.get(sid) if sid else None
        if sid and stamp is not None and stamp[0] == before:
            self._live_at[sid] = (after, stamp[1])

