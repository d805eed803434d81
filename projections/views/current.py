"""Current reads of entries through a memo the owner keeps across reads.

Reading the candidates is most of a search on a small store: for each, the
id of the entry recorded at its seq (``by_seq``), its current stored version
(one cursor seek), its payload from the log, and the view and ranking inputs
built from them. Two of those never change:

- the entry recorded at a seq (a seq records one entry, for good);
- what a stored version's bytes give: its view is a pure function of them
  and the payload at its ``source_seq``, its ranking inputs of them alone.

So :class:`CurrentMemo` keeps both, keyed by what they are a function of,
for current reads only, on a snapshot the log has not moved past
(:func:`projections.search.cache.fresh`): there the current version of an
entry never points at an erased payload (a deletion leaves it none, a
redaction points it at the redacted copy), while an older version can. A change to an entry writes a
new version, whose bytes miss the memo; a deletion leaves the entry no
version, so its seq finds nothing. Nothing needs invalidating; the owner
empties the memo only so as not to keep erased content (see
:mod:`projections.search.cache`), and when a map is full.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..decay import entry_importance
from ..models import EntryView, RankInputs, StoredEntry
from .keys import decode_stored, latest_at, rank_entry_id, u64

__all__ = ["MEMO_MAX", "CurrentMemo", "Row", "current_rows"]

MEMO_MAX = 4096  # items each map of a memo holds (emptied when full)

Row = tuple[EntryView, RankInputs]


class _Reader(Protocol):
    """What this module reads through (:class:`~.read.ViewReader`, which
    imports this module)."""

    txn: Any
    dbs: dict[bytes, Any]

    def resolve(self, stored: Sequence[StoredEntry]) -> list[EntryView]: ...  # pragma: no cover


class CurrentMemo:
    """Entry ids by recorded seq, and (view, ranking inputs) by the bytes of
    a stored version; see the module's text."""

    __slots__ = ("generation", "ids", "rows")

    def __init__(self) -> None:
        self.ids: dict[int, str] = {}
        self.rows: dict[bytes, Row] = {}
        self.generation = 0  # how many times it was emptied

    def clear(self) -> None:
        """Forget everything (a purge, a close, an erasure seen). A search that
        began before keeps nothing more (see ``since`` in :func:`current_rows`)."""
        self.ids.clear()
        self.rows.clear()
        self.generation += 1


def current_rows(reader: _Reader, seqs: Sequence[int], memo: CurrentMemo, since: int,
                 ) -> list[Row | None]:
    """The current view and ranking inputs of the entry recorded at each of
    ``seqs`` (None where there is none), through ``memo``. The views are of
    any state: the caller keeps the shown ones. ``since``: the memo's
    generation when the caller's search began; what it reads is kept only
    while the memo has not been emptied since (what a search read before an
    erasure is never kept after it)."""
    get = reader.txn.cursor(db=reader.dbs[b"by_seq"]).get
    cursor = reader.txn.cursor(db=reader.dbs[b"entries"])
    ids = memo.ids
    raws: list[bytes | None] = []
    for seq in seqs:
        entry_id = ids.get(seq)
        if entry_id is None:
            value = get(u64(seq))
            if value is None:
                raws.append(None)
                continue
            entry_id = rank_entry_id(value)
            if memo.generation == since:
                if len(ids) >= MEMO_MAX:
                    ids.clear()
                ids[seq] = entry_id
        raws.append(latest_at(cursor, entry_id, None))
    return _rows(reader, raws, memo, since)


def _rows(reader: _Reader, raws: list[bytes | None], memo: CurrentMemo, since: int) -> list[Row | None]:
    """The rows of stored versions (their bytes), from ``rows`` where it has
    them; the others are resolved (one ``events_at``) and kept there."""
    rows = memo.rows
    found = [None if raw is None else rows.get(raw) for raw in raws]
    missing = [raw for raw, row in zip(raws, found, strict=True) if raw is not None and row is None]
    if not missing:
        return found
    stored = [decode_stored(raw) for raw in missing]
    made = {raw: (view, RankInputs(s.entry_id, s.kind, entry_importance(s), s.occurred_at))
            for raw, s, view in zip(missing, stored, reader.resolve(stored), strict=True)}
    if memo.generation == since:
        if len(rows) + len(made) > MEMO_MAX:
            rows.clear()
        rows.update(made)
    return [row if row is not None or raw is None else made[raw]
            for raw, row in zip(raws, found, strict=True)]
