r"""Search use cases: validated queries, the projections' ranking turned into
:class:`SearchResult`\ s with snippets, and the access they record."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import msgspec

from eventstore import (
    ENTRY_KINDS,
    FINDING_STATUSES,
    LEVELS,
    MEMORY_DOC_KIND,
    SEARCH_MODES,
    SEARCH_SOURCES,
    SORTS,
    InvalidInputError,
    QueryTimeoutError,
    format_micros,
    now_micros,
    shown,
)
from projections import MemoryView, Ranked, Scope, SearchQuery, ViewReader

from ..metrics import METRICS
from ..results import SearchResult
from ..store.store import Store
from ..store.validate import check_choice, check_id, check_ids, check_labels, check_unit, to_time
from .restore import restore_on_read

__all__ = ["check_deadline", "check_scope", "find", "make_query", "make_snippet", "search", "with_findings"]

_SNIPPET = 160
clock = time.monotonic  # the search deadline's clock


def make_query(text: object = "", kinds: Iterable[str] | None = None, session_id: object = None,
               agent_ids: Iterable[str] | None = None, user_id: object = None,
               tags: Iterable[str] | None = None, since: Any = None, until: Any = None,
               limit: object = 10, sort: object = "relevance", min_relevance: object = 0.0,
               include_archived: bool = True, scope: object = None, source: object = "entries",
               mode: object = None, topic: object = None) -> SearchQuery:
    """Validate search arguments into a :class:`SearchQuery` (nothing is read or written).

    ``scope``: a :class:`~projections.Scope` (who is reading) or None (no
    visibility filter); ``source``: entries, memories or both; ``mode``: text,
    semantic, hybrid or None (hybrid when an embedder is installed, else text);
    ``topic``: only messages of that topic (``details.topic``, exactly as recorded).
    """
    if not isinstance(text, str) or len(text) > 1000:
        raise InvalidInputError("query text must be a string of at most 1000 characters")
    kinds_t = tuple(check_choice(k, "type", ENTRY_KINDS) for k in (kinds or ()))
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise InvalidInputError(f"limit must be an integer from 1 to 1000 (got {shown(limit)})")
    check_choice(sort, "sort", SORTS)
    floor = check_unit(min_relevance, "min_relevance")
    if floor is None:
        raise InvalidInputError("min_relevance must be a number from 0 to 1")
    start, end = to_time(since, "since"), to_time(until, "until")
    if start is not None and end is not None and start > end:
        raise InvalidInputError("since is after until")
    return SearchQuery(
        text=text, kinds=kinds_t,
        session_id=None if session_id is None else check_id(session_id, "session id"),
        agent_ids=check_ids(agent_ids, "agent ids"),
        user_id=None if user_id is None else check_id(user_id, "user id"),
        tags=check_labels(tags, "tags"), since=start, until=end, limit=limit,
        sort=sort,  # type: ignore[arg-type]
        min_relevance=floor, include_archived=bool(include_archived),
        scope=check_scope(scope), source=check_choice(source, "source", SEARCH_SOURCES),  # type: ignore[arg-type]
        mode=None if mode is None else check_choice(mode, "mode", SEARCH_MODES),  # type: ignore[arg-type]
        topic=None if topic is None else check_labels([topic], "topic")[0],
    )


def with_findings(query: SearchQuery, statuses: Iterable[str] | None,
                  severities: Iterable[str] | None) -> SearchQuery:
    """``query`` kept to the findings with one of ``statuses`` and one of
    ``severities`` (each None or empty: no such filter); a value that is no
    status or severity is refused."""
    found = tuple(check_choice(v, "status", FINDING_STATUSES) for v in _values(statuses))
    levels = tuple(check_choice(v, "severity", LEVELS) for v in _values(severities))
    if not found and not levels:
        return query
    return msgspec.structs.replace(query, statuses=found, severities=levels)


def _values(values: Iterable[str] | str | None) -> tuple[str, ...]:
    if values is None:
        return ()
    return (values,) if isinstance(values, str) else tuple(values)


def check_scope(scope: object) -> Scope | None:
    """A valid :class:`Scope` (its ids checked) or None."""
    if scope is None:
        return None
    if not isinstance(scope, Scope):
        raise InvalidInputError("scope must be a Scope or None")
    return Scope(
        user_id=None if scope.user_id is None else check_id(scope.user_id, "scope user id"),
        agent_id=None if scope.agent_id is None else check_id(scope.agent_id, "scope agent id"),
        session_ids=check_ids(scope.session_ids, "scope session ids"), shared=bool(scope.shared))


def search(store: Store, query: SearchQuery, record_access: bool | None = None) -> list[SearchResult]:
    """Search now; notes the access unless switched off. The access is appended
    later, in a batch (``entries.accessed``, see :mod:`.access`): a search never
    waits for a durable write."""
    if query.session_id is not None:  # a read naming an archived session restores it
        restore_on_read(store, query.session_id)
    started = clock()
    with METRICS.timed("search"):
        results = find(store, query)
    check_deadline(store.settings.search_deadline_ms, started)
    METRICS.add("searches")
    if results and (store.settings.record_access if record_access is None else record_access):
        store.access.record(r.id for r in results if r.type != MEMORY_DOC_KIND)
    return results


def check_deadline(deadline_ms: int, started: float) -> None:
    """Refuse a search that ran past ``deadline_ms`` since ``started`` (0: no
    deadline) with ``E_QUERY_TIMEOUT``, before it records any access. The
    check runs when the ranking returns: it does not cut the search short."""
    if deadline_ms and (clock() - started) * 1000 > deadline_ms:
        raise QueryTimeoutError(f"the search ran past its deadline of {deadline_ms} ms "
                                "(search_deadline_ms); narrow the query or raise the deadline")


def find(store: Store, query: SearchQuery, as_of: int | None = None, now: int | None = None,
         reader: ViewReader | None = None) -> list[SearchResult]:
    """The projections' ranking of ``query`` (as of a seq, at ``now``) as
    results with snippets; records nothing."""
    ranking = store.proj.search(query, as_of=as_of, now=now_micros() if now is None else now,
                                reader=reader)
    words = list(ranking.words)
    return [_result(r, words) for r in ranking.entries]


def _result(ranked: Ranked, words: list[str]) -> SearchResult:
    view = ranked.view
    if isinstance(view, MemoryView):
        return _memory_result(ranked, view, words)
    entry = view.entry
    assert entry is not None
    return SearchResult(  # positional, in the field order of SearchResult
        view.entry_id, entry.kind, entry.session_id, entry.content, make_snippet(entry.content, words),
        round(ranked.relevance, 6), round(ranked.factor, 6), format_micros(entry.occurred_at),
        format_micros(view.recorded_at), entry.tags, entry.agent_id,
    )


def _memory_result(ranked: Ranked, memory: MemoryView, words: list[str]) -> SearchResult:
    """A user memory as a result: type ``memory``, its memory id, its value."""
    content = memory.content or ""
    saved = format_micros(memory.saved_at)
    return SearchResult(memory.memory_id, MEMORY_DOC_KIND, None, content, make_snippet(content, words),
                        round(ranked.relevance, 6), round(ranked.factor, 6), saved, saved, ())


def make_snippet(content: str, words: list[str], width: int = _SNIPPET) -> str:
    """A window of the content around the first query word (seed 002), with ellipses."""
    flat = content if _single_spaced(content) else " ".join(content.split())
    if len(flat) <= width:
        return flat
    lower = flat.lower()
    positions = [p for w in words if (p := lower.find(w[: max(3, len(w) - 1)])) >= 0]
    start = max(0, min(positions) - 30) if positions else 0
    end = min(len(flat), start + width)
    start = max(0, end - width)
    return ("…" if start else "") + flat[start:end].strip() + ("…" if end < len(flat) else "")


def _single_spaced(text: str) -> bool:
    """True when ``" ".join(text.split())`` would return ``text`` unchanged: no
    whitespace but single inner spaces (every other whitespace character is
    non-printable), checked without splitting."""
    return text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " "
