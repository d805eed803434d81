"""Erasure follows derivation, and the summaries are written again.

A summary holds text of its sources, so deleting any source deletes every
summary derived from it (``derived_from``, followed through summaries of
summaries: :func:`commands.app.selection.select` with ``include_derived``),
and the purge scans for the summaries' text too. Deleting a user deletes the
summaries of their sessions with the sessions.

Then each summary that went only because one of its sources went (not one the
request named, nor one of a session or user it deleted) is summarised again
from the sources that remain, when ``resummarise_on_delete`` is on (the
default) and the call does not say ``resummarise=False``:

- the new summary is an ``entry.recorded`` (kind ``summary``, same session,
  ``derived_from`` the remaining sources) appended with
  ``summary.resummarised`` (new id, replaced id, sources, the deletion's
  request id), on the summary's stream;
- a summary of summaries takes the new summaries in place of the deleted ones
  (oldest first), so a rolling session summary is rebuilt whole;
- the summariser sees only the remaining sources' texts, so the new summary
  holds no deleted text;
- messages the deleted summary stood for in the context point at the new one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import msgspec

from eventstore import DeletionCriteria, EntryRecorded, SummaryResummarised
from projections import ViewReader

from . import log as _log
from .compaction import ACTOR, summarise_texts
from .extraction import AUTO_TAGS
from .forgetting import criteria_of
from .forgetting import delete as _delete
from .results import DeletionReport
from .selection import select
from .store import Store
from .summarise import Summariser
from .validate import check_flag
from .writer import SYSTEM_STREAM

__all__ = ["after_redaction", "delete"]

_CRITERIA = ("ids", "session_id", "user_id", "kinds", "tags", "before", "after")


@dataclass(frozen=True)
class _Target:
    """A summary the deletion takes only through derivation."""

    entry: EntryRecorded
    seq: int


def delete(store: Store, summariser: Summariser, *, resummarise: bool | None = None,
           **request: Any) -> DeletionReport:
    """:func:`commands.app.forgetting.delete`, then the summaries it took
    through derivation are written again from their remaining sources."""
    wanted = (store.settings.resummarise_on_delete if resummarise is None
              else check_flag(resummarise, "resummarise"))
    previewing = request.get("dry_run") is True
    targets = (_targets(store, request) if wanted and request.get("include_derived", True)
               and not previewing else [])
    report = _delete(store, **request)
    if targets:
        _resummarise(store, summariser, targets, set(report.ids), report.request_id)
    return report


def after_redaction(store: Store, summariser: Summariser, entry_id: str, requested_by: str,
                    defer: bool = False) -> DeletionReport | None:
    """Redaction follows derivation too: the summaries derived from a redacted
    entry (and the summaries of those) hold the text it removed, so they are
    deleted and, unless ``resummarise_on_delete`` is off, written again from
    their sources as they are now (the redacted entry's remaining text
    included). memlog's other copies of the text, the automatic handoff and the
    extracted decisions and lessons (tags ``auto-handoff``, ``auto-extract``),
    are deleted. None when nothing derives so from the entry."""
    with store.read() as views:
        children = [v for v in views.entries(views.derived_from(entry_id)) if v is not None]
        ids = tuple(v.entry_id for v in children if v.state != "deleted" and (
            v.kind == "summary" or (v.entry is not None and AUTO_TAGS & set(v.entry.tags))))
        if not ids:
            return None
        every = select(views, DeletionCriteria(ids=ids))
        found = sorted((r for r in every.refs.values() if r.kind == "summary"), key=lambda r: r.recorded_seq)
        targets = _entries(views, [r.entry_id for r in found])
    report = _delete(store, ids=list(ids), reason="redaction follows derivation",
                     requested_by=requested_by, defer=defer)
    if targets and store.settings.resummarise_on_delete:
        _resummarise(store, summariser, targets, set(report.ids), report.request_id)
    return report


def _targets(store: Store, request: dict[str, Any]) -> list[_Target]:
    """The summaries the request deletes through derivation alone, oldest first."""
    criteria = criteria_of(**{k: v for k, v in request.items() if k in _CRITERIA})
    with store.read() as views:
        every = select(views, criteria)
        direct = select(views, msgspec.structs.replace(criteria, include_derived=False))
        found = [r for eid, r in every.refs.items() if r.kind == "summary" and eid not in direct.refs]
        return _entries(views, [r.entry_id for r in sorted(found, key=lambda r: r.recorded_seq)])


def _entries(views: ViewReader, ids: Iterable[str]) -> list[_Target]:
    """The summaries to write again; a memory resource's flush summary is not one
    (a new summary would stand outside the resource: the resource's next flush
    folds what remains)."""
    return [_Target(v.entry, v.recorded_seq) for v in views.entries(ids)
            if v is not None and v.entry is not None
            and not any(t.startswith("resource:") for t in v.entry.tags)]


def _resummarise(store: Store, summariser: Summariser, targets: list[_Target], deleted: set[str],
                 request_id: str) -> None:
    replaced: dict[str, str] = {}
    for target in targets:
        old = target.entry
        sources = tuple(dict.fromkeys(replaced.get(s, s) for s in old.derived_from
                                      if s in replaced or s not in deleted))
        with store.read() as views:
            found = [v for v in views.entries(sources) if v is not None and v.entry is not None
                     and v.state != "deleted"]
        if not found:
            continue
        texts = [v.entry.content for v in found if v.entry is not None]
        text = summarise_texts(summariser, texts, store.settings.summary_input_chars)
        summary = store.entries.build("summary", text, session_id=old.session_id,
                                      user_id=old.user_id, derived_from=[v.entry_id for v in found],
                                      occurred_at=old.occurred_at)
        event = SummaryResummarised(summary_entry_id=summary.entry_id, replaced_entry_id=old.entry_id,
                                    source_entry_ids=summary.derived_from, session_id=old.session_id,
                                    request_id=request_id)
        stream = (f"session:{old.session_id}" if old.session_id
                  else store.user_stream(old.user_id) if old.user_id else SYSTEM_STREAM)
        store.log.append(stream, [summary, event], actor=ACTOR)
        replaced[old.entry_id] = summary.entry_id
        _log.info("summary written again", summary_id=summary.entry_id, replaced=old.entry_id,
                  request_id=request_id)
