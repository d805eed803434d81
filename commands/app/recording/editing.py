"""Editing an entry's text: the ``entry.edited`` use case.

An edit replaces the content of a shown entry (live or redacted) and keeps
every other field. The new text passes the content checks and the ingest
redaction that a recorded entry passes. The event goes to the stream the
entry was recorded in, so it is ordered after the entry's other changes.

An entry that is not shown (superseded, compacted, deleted) or a memory is
refused as an unknown entry (``E_ENTRY_NOT_FOUND``), a preference with
``E_SCHEMA_INVALID``: a preference or memory is replaced by setting its key
again, not by an edit. The tags follow the text: the old text's hashtags
leave, the new text's join (after the ingest redaction).

Imports: eventstore, projections and this package's store, records and validation.
"""

from __future__ import annotations

from eventstore import SHOWN_STATES, EntryEdited, EntryNotFoundError, Event, InvalidInputError

from .. import log as _log
from ..store.entries import hashtags
from ..store.store import Store
from ..store.validate import check_content, check_id
from .records import PROJECT_STREAM

__all__ = ["edit_entry"]


def edit_entry(store: Store, entry_id: str, content: str) -> int:
    """Replace a shown entry's text; returns the seq of the ``entry.edited``."""
    eid = check_id(entry_id, "entry id")
    text = check_content(content, "content", store.settings.max_content_bytes)
    counts: dict[str, int] = {}
    redactor = store.entries.redactor
    if redactor is not None:
        text = redactor.redact(text, counts)
    with store.read() as views:
        view = views.entry(eid)
    if view is None or view.entry is None or view.state not in SHOWN_STATES:
        raise EntryNotFoundError(f"entry {eid} not found")
    if view.kind == "preference":  # its key and value are its details: set the key again
        raise InvalidInputError(f"entry {eid} is a preference: set its key again to change it")
    tags = _tags(view.entry.tags, view.entry.content, text)
    stream = (f"session:{view.session_id}" if view.session_id else
              store.user_stream(view.user_id) if view.user_id else PROJECT_STREAM)

    def decide() -> list[Event]:
        with store.read() as now:  # a deletion or compaction that won the race refuses the edit
            current = now.stored_entry(eid)
        if current is None or current.state not in SHOWN_STATES:
            raise EntryNotFoundError(f"entry {eid} not found")
        return [EntryEdited(entry_id=eid, content=text, redactions=counts, tags=tags)]

    seq = store.writer.append(stream, decide)
    _log.info("entry edited", entry_id=eid, seq=seq)
    return seq


def _tags(tags: tuple[str, ...], old: str, new: str) -> tuple[str, ...]:
    """The tags after an edit: the given ones (not the old text's hashtags),
    then the new text's hashtags, each once."""
    gone = set(hashtags(old))
    kept = tuple(t for t in tags if t.lower() not in gone)
    given = {t.lower() for t in kept}
    return kept + tuple(t for t in hashtags(new) if t not in given)
