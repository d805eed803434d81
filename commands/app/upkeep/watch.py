"""The check on write: compaction and session summaries happen by themselves.

After every entry recorded in a session (through the facade), the watch asks
two questions: has the session reached ``compact_at`` of its size limit (then
it compacts, :mod:`commands.app.upkeep.compaction`), else have its messages not yet
summarised passed ``summary_threshold_tokens`` (then it summarises,
:mod:`commands.app.upkeep.summaries`)?

The check is cheap: the watch keeps a tally per session (its content bytes and
the characters of its messages not yet summarised) and adds each recorded
entry to it. The tally is trusted while the session's stream version moved by
exactly that one append; otherwise (another process wrote, or the session
changed) it is measured again from the views: the session's statistics, and
its messages back to the first one already summarised. Inside a batch the
check waits for the batch's end.

A failure of the maintenance (a race lost five times, a summariser that
returns nothing, too much, or raises, a session gone meanwhile, a full disk) never
fails the write that triggered it, which did land: it is logged (ids and
error code only; a storage error as a warning) and the next write tries
again. A disk that stays full fails that next write itself, before it writes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from eventstore import ConflictError, EntryRecorded, InvalidInputError, NotFoundError, StorageError

from .. import log as _log
from ..store.store import Store
from .compaction import compact_session, threshold_bytes
from .summaries import pending_messages, summarise_session
from .summariser import Summariser

__all__ = ["LifecycleWatch"]


@dataclass(frozen=True)
class _Tally:
    version: int  # the session stream's version it counts up to
    bytes: int  # the session's content bytes
    chars: int  # characters of the messages not yet summarised
    messages: int  # how many they are


class LifecycleWatch:
    """Runs compaction and summaries when a write takes a session past their thresholds."""

    def __init__(self, store: Store, summariser: Summariser) -> None:
        self.store = store
        self.summariser = summariser
        self._tallies: dict[str, _Tally] = {}
        self._pending: set[str] = set()
        self._busy = False

    def recorded(self, entry: EntryRecorded) -> None:
        """Called after an entry was appended (the store's ``on_recorded`` hook)."""
        settings = self.store.settings
        sid = entry.session_id
        if sid is None or self._busy or not (settings.auto_compact or settings.auto_summarise):
            return
        if self.store.writer.batching:
            self._pending.add(sid)
            self._tallies.pop(sid, None)
            return
        self._check(sid, entry)

    def after_batch(self) -> None:
        """Check the sessions a batch wrote to."""
        pending, self._pending = self._pending, set()
        for sid in sorted(pending):
            self._check(sid, None)

    def _check(self, sid: str, entry: EntryRecorded | None) -> None:
        settings = self.store.settings
        version = self.store.log.stream_version(f"session:{sid}")
        tally = self._tallies.get(sid)
        if tally is not None and entry is not None and tally.version + 1 == version:
            message = entry.kind == "message"
            tally = _Tally(version, tally.bytes + len(entry.content.encode()),
                           tally.chars + (len(entry.content) if message else 0), tally.messages + message)
        else:
            tally = self._measure(sid, version)
        self._tallies[sid] = tally
        if settings.auto_compact and tally.bytes >= threshold_bytes(settings):
            self._run(sid, lambda: compact_session(self.store, self.summariser, sid))
        elif settings.auto_summarise and math.ceil(tally.chars / 4) > settings.summary_threshold_tokens \
                and tally.messages > settings.summary_keep_messages:
            self._run(sid, lambda: summarise_session(self.store, self.summariser, sid))

    def _measure(self, sid: str, version: int) -> _Tally:
        with self.store.read() as views:
            size = views.session_stats(sid).bytes
            tail = pending_messages(views, sid)[0] if self.store.settings.auto_summarise else []
        return _Tally(version, size, sum(len(v.entry.content) for v in tail if v.entry is not None),
                      len(tail))

    def _run(self, sid: str, work: Callable[[], object]) -> None:
        self._busy = True
        try:
            work()
        except (ConflictError, InvalidInputError, NotFoundError) as exc:
            _log.info("life-cycle maintenance failed; the next write tries again", session_id=sid,
                      code=exc.code)
        except StorageError as exc:
            _log.warning("life-cycle maintenance failed on storage; the next write tries again",
                         session_id=sid, code=exc.code)
        except Exception as exc:  # a plugged summariser's own failure (its type only: no content)
            _log.warning("life-cycle maintenance failed; the next write tries again", session_id=sid,
                         error=type(exc).__name__)
        finally:
            self._busy = False
            self._tallies.pop(sid, None)
