"""Session summaries (seed 001): past ``summary_threshold_tokens`` (8000) of a
session's messages not yet summarised, the oldest of them are summarised and
the last ``summary_keep_messages`` (10) stay verbatim.

- **Tokens** are counted as the context builder counts them: characters / 4,
  rounded up (:func:`~commands.app.context.chars_over_four`), over the
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
  ``auto_summarise`` is on (:mod:`commands.app.compaction_watch`), or on demand
  (:func:`summarise_session`, ``memlog summarise``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from eventstore import SHOWN_STATES, ConcurrencyError, ReadOnlyError, SessionNotFoundError, SessionSummarised
from projections import EntryView, ViewReader

from . import log as _log
from .compaction import ACTOR, summarise_texts
from .settings import Settings
from .store import Store
from .summarise import Summariser
from .validate import check_id

__all__ = ["SummaryReport", "pending_messages", "policy_of", "summarise_session", "tokens_of"]

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
