"""The store: one data directory's log, projections, settings and writer.

Every use case of :mod:`commands.app` takes a :class:`Store`; the
:class:`~commands.MemoryLog` facade holds one and the CLI opens one per
command.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Literal, Self

from eventstore import EntryRecorded, EventLog, LogSettings, ReadOnlyError, StoreNotFoundError, UsageError
from eventstore.factory import is_remote
from eventstore.storage import check_private_dir
from projections import Embedder, Projections, ViewReader

from .access import AccessRecorder
from .entries import EntryFactory
from .pseudonym import Pseudonyms
from .redaction import Redactor
from .settings import Settings
from .writer import Writer

__all__ = ["Store", "holds_store", "require_store"]


def holds_store(data_dir: Path) -> bool:
    """Whether ``data_dir`` holds a memlog store (its log's data file)."""
    return (data_dir / "log" / "data.mdb").is_file()


def require_store(data_dir: Path) -> None:
    """Raise :class:`~eventstore.StoreNotFoundError` unless ``data_dir`` holds a store."""
    if not holds_store(data_dir):
        raise StoreNotFoundError(
            f"no memlog store in {os.fspath(data_dir)!r}; check --dir (or MEMLOG_DIR), "
            "or create one with `memlog init`")


class Store:
    """A memlog store composed of its parts: ``log``, ``proj`` (the
    projections), ``settings``, ``entries`` (the entry factory, with ingest
    redaction), ``writer`` and ``access`` (searches' accesses, appended in
    batches off the read path).

    With ``create=False`` a directory that holds no store is refused with
    :class:`~eventstore.StoreNotFoundError` and nothing is created (reads
    from the CLI open stores this way). With ``read_only=True`` the store
    must exist, every write raises :class:`~eventstore.ReadOnlyError`, and
    reads record no accesses.
    """

    def __init__(self, data_dir: Path, settings: Settings, *, create: bool = True,
                 embedder: Embedder | Literal["default"] | None = "default",
                 read_only: bool = False, log: str | None = None) -> None:
        self.read_only = read_only
        if log is not None and not is_remote(log):  # e.g. MEMLOG_LOG_URL=json must not make a ./json log
            raise UsageError("log= (--log, MEMLOG_LOG_URL) takes a nats://host:port/<stream> location")
        if (not create or read_only) and log is None:  # a shared log (nats://) is on its server
            require_store(data_dir)
        self.data_dir = data_dir
        self.settings = settings
        self.pseudonyms = Pseudonyms(data_dir, read_only)  # what the log keeps of a user id
        self.shared = log is not None  # the log is on servers other hosts share
        check_private_dir(data_dir)  # ours alone: no other user, nobody else can write
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        # ``log``: a shared log (``nats://...``); projections stay in ``data_dir``.
        self.log = EventLog.open(data_dir / "log" if log is None else log, LogSettings(
            max_payload_bytes=settings.max_content_bytes * 4 + 65536, sync=settings.sync,
            read_only=read_only))
        try:
            self.proj = Projections(data_dir, self.log, shards=settings.search_shards, sync=settings.sync,
                                    embedder=embedder if settings.semantic else None)
        except BaseException:
            self.log.close()
            raise
        self.writer = Writer(self.log, self.proj, settings.default_actor)
        self.writer.auto_restore = settings.auto_restore
        # searches' accesses, batched; a read-only store records none
        self.access = AccessRecorder(self.log, settings.default_actor, enabled=not read_only)
        # Called with every entry recorded through the use cases (the life cycle's check on write).
        self.on_recorded: Callable[[EntryRecorded], None] | None = None

    @functools.cached_property
    def entries(self) -> EntryFactory:
        """The entry factory, with ingest redaction when ``redact_on_ingest`` is on;
        made at the first write (a read compiles no redaction pattern)."""
        settings = self.settings
        redactor = None
        if settings.redact_on_ingest:
            redactor = Redactor(settings.redaction_patterns, settings.custom_redactions)
        return EntryFactory(settings.max_content_bytes, redactor)

    def alias(self, user_id: str) -> str | None:
        """The pseudonym of ``user_id``; None when a read-only store has no secret
        yet (then nothing was written under a pseudonym)."""
        try:
            return self.pseudonyms.of(user_id)
        except ReadOnlyError:
            return None

    def set_actor(self, actor: str) -> None:
        """The actor of every write from now on (the store's own and its accesses')."""
        self.writer.actor = actor
        self.access.actor = actor

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Flush the recorded accesses; close projections and log."""
        try:
            self.access.close()
        finally:
            self._close_parts()

    def _close_parts(self) -> None:
        self.proj.close()
        self.log.close()

    def check_writable(self, what: str) -> None:
        """Raise :class:`~eventstore.ReadOnlyError` on a read-only store: for a
        write refused up front (a replay or a purge rewrites files without a log
        append; a summary or compaction may find nothing to write)."""
        if self.read_only:
            raise ReadOnlyError(f"the store is open read-only; {what} would write to it")

    def user_stream(self, user_id: str, event_ids: Sequence[str] | None = None) -> str:
        """The stream of a user's own writes: ``user:`` and the id's pseudonym
        (:mod:`.pseudonym`). A client event id already recorded on the stream a
        store written before pseudonyms used (``user:<id>``) keeps that stream,
        so that an import run again stays a no-op."""
        for event_id in event_ids or ():
            seq = self.log.seq_of(event_id)
            if seq is not None and self.log.get(seq).stream == f"user:{user_id}":
                return f"user:{user_id}"
        return f"user:{self.pseudonyms.of(user_id)}"

    def read(self, as_of: int | None = None, search: bool = False) -> contextlib.AbstractContextManager[
            ViewReader]:
        """The views caught up to the log head, as of a seq if given (see
        :meth:`projections.Projections.read`)."""
        return self.proj.read(as_of, search=search)
