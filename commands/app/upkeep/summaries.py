"""Session summaries, and summaries written again after an erasure.

Past ``summary_threshold_tokens`` (8000) of a
session's messages not yet summarised, the oldest of them are summarised and
the last ``summary_keep_messages`` (10) stay verbatim.

- **Tokens** are counted as the context builder counts them: characters / 4,
  rounded up (:func:`~commands.app.recall.context.chars_over_four`), over the
  contents of the messages not yet summarised.
- **Rolling.** The summary covers the messages summarised before too: the
  previous session summary is the first text given to the summariser and the
  first id of ``derived_from``, so one summary stands for all the history cut.
- **Events.** One append to the session's stream: the summary
  (``entry.recorded``, kind ``summary``, ``derived_from`` the previous summary
  and the messages) and ``session.summarised`` (the summary id, the messages'
  ids, the policy, the tokens before and after). The views mark each message
  with the summary that stands for it (:meth:`projections.ViewReader.summarised_by`).
- **What changes.** The summarised messages stay in the log, in search, in
  ``show`` and in the transcript; they leave the context, which shows the
  summary in their place ("Summary of earlier conversation").
- **When.** On a message that takes the session past the threshold, when
  ``auto_summarise`` is on (:mod:`commands.app.upkeep.watch`), or on demand
  (:func:`summarise_session`, ``memlog summarise``).

**Erasure follows derivation, and the summaries are written again.**
A summary holds text of its sources, so deleting any source deletes every
summary derived from it (``derived_from``, followed through summaries of
summaries: :func:`commands.app.forgetting.selection.select` with ``include_derived``),
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

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from typing import Any

import msgspec

from eventstore import (
    SHOWN_STATES,
    ConcurrencyError,
    DeletionCriteria,
    EntryRecorded,
    ReadOnlyError,
    SessionNotFoundError,
    SessionSummarised,
    SummaryResummarised,
)
from projections import EntryView, ViewReader

from .. import log as _log
from ..forgetting.requests import criteria_of
from ..forgetting.requests import delete as _delete
from ..forgetting.selection import select
from ..results import DeletionReport
from ..store.settings import Settings
from ..store.store import Store
from ..store.validate import check_flag, check_id
from ..store.writer import SYSTEM_STREAM
from .compaction import ACTOR, summarise_texts
from .extraction import AUTO_TAGS
from .summariser import Summariser

__all__ = ["SummaryReport", "after_redaction", "delete", "pending_messages", "policy_of", "summarise_session",
           "tokens_of"]

_RETRIES = 5


@dataclass(frozen=True)
class SummaryReport:
    """What summarising a session did (ids and counts, no content)."""

    session_id: str
    summarised: bool
    tokens_before: int
    tokens_after: int
    threshold: int
    summarised_ids: tuple[str, ...]
    kept: int
    policy: str
    summary_id: str | None = None
    seq: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready builtins."""
        out = asdict(self)
        out["summarised_ids"] = list(self.summarised_ids)
        return out


def policy_of(settings: Settings) -> str:
    """The policy as ``session.summarised`` records it."""
    return f"tokens>{settings.summary_threshold_tokens} keep_last={settings.summary_keep_messages}"


def tokens_of(views: list[EntryView]) -> int:
    """Characters / 4, rounded up, of the messages' contents."""
    return math.ceil(sum(len(v.entry.content) for v in views if v.entry is not None) / 4)


def pending_messages(views: ViewReader, session_id: str) -> tuple[list[EntryView], str | None]:
    """The session's messages not yet summarised, oldest first, and the summary
    that stands for the ones before them (None when none does). Read newest
    first, up to the first summarised message."""
    tail: list[EntryView] = []
    previous = None
    for view in views.session_entries(session_id, ("message",), newest_first=True):
        previous = views.summarised_by(view.entry_id)
        if previous is not None:
            break
        tail.append(view)
    tail.reverse()
    return tail, previous


def summarise_session(store: Store, summariser: Summariser, session_id: str,
                      force: bool = False) -> SummaryReport:
    """Summarise the session's oldest messages not yet summarised, keeping the
    last ``summary_keep_messages``, when they pass the token threshold (or,
    with ``force``, whatever their tokens)."""
    store.check_writable("a summary")
    sid = check_id(session_id, "session id")
    stream = f"session:{sid}"
    for attempt in range(_RETRIES):
        version = store.log.stream_version(stream)
        with store.read() as views:
            if views.session(sid) is None:
                raise SessionNotFoundError(f"session {sid} not found")
            tail, previous = pending_messages(views, sid)
            report, chosen = _decide(store.settings, sid, tail, force)
            if not chosen:
                return report
            texts, sources = _sources(views, previous, chosen)
        if store.read_only:
            raise ReadOnlyError("the store is open read-only; summarising appends to the log")
        text = summarise_texts(summariser, texts, store.settings.summary_input_chars)
        summary = store.entries.build("summary", text, session_id=sid, derived_from=sources)
        event = SessionSummarised(session_id=sid, summary_entry_id=summary.entry_id,
                                  summarised_entry_ids=report.summarised_ids, policy=report.policy,
                                  tokens_before=report.tokens_before, tokens_after=report.tokens_after)
        try:
            result = store.log.append(stream, [summary, event], actor=ACTOR, expected_version=version)
        except ConcurrencyError:
            if attempt == _RETRIES - 1:
                raise
            continue
        _log.info("session summarised", session_id=sid, messages=len(report.summarised_ids),
                  summary_id=summary.entry_id)
        return replace(report, summarised=True, summary_id=summary.entry_id, seq=result.first_seq)
    raise AssertionError("unreachable")


def _decide(settings: Settings, sid: str, tail: list[EntryView],
            force: bool) -> tuple[SummaryReport, list[EntryView]]:
    """The report so far and the messages to summarise (none: nothing to do)."""
    keep = settings.summary_keep_messages
    tokens = tokens_of(tail)
    over = force or tokens > settings.summary_threshold_tokens
    chosen = (tail[:-keep] if keep else tail) if over else []
    kept = tail[len(chosen):]
    report = SummaryReport(
        session_id=sid, summarised=False, tokens_before=tokens, tokens_after=tokens_of(kept),
        threshold=settings.summary_threshold_tokens, summarised_ids=tuple(v.entry_id for v in chosen),
        kept=len(kept), policy=policy_of(settings))
    return report, chosen


def _sources(views: ViewReader, previous: str | None,
             chosen: list[EntryView]) -> tuple[list[str], tuple[str, ...]]:
    """The texts to summarise and the ids they come from: the previous summary
    (while it is shown) first, then the chosen messages."""
    texts = [v.entry.content for v in chosen if v.entry is not None]
    ids = tuple(v.entry_id for v in chosen if v.entry is not None)
    before = views.entry(previous) if previous is not None else None
    if before is not None and before.entry is not None and before.state in SHOWN_STATES:
        return [before.entry.content, *texts], (before.entry_id, *ids)
    return texts, ids


_CRITERIA = ("ids", "session_id", "user_id", "kinds", "tags", "before", "after")


@dataclass(frozen=True)
class _Target:
    """A summary the deletion takes only through derivation."""

    entry: EntryRecorded
    seq: int


def delete(store: Store, summariser: Summariser, *, resummarise: bool | None = None,
           **request: Any) -> DeletionReport:
    """:func:`commands.app.forgetting.requests.delete`, then the summaries it took
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
