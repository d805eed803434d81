"""Sealing the recent payloads into their segments (:mod:`.recent`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..storage.safety import crashpoint
from .layout import DIRTY, META, read_int_set, write_int_set
from .recent import last_recent_base, read_sealed, take_recent

if TYPE_CHECKING:
    from .logenv import LogEnv

__all__ = ["seal_all"]


def seal_all(shared: LogEnv) -> int:
    """Move every recent payload into its segment; return how many moved."""
    if shared.read(lambda txn: read_sealed(txn, shared.dbs[META])) is None:
        return 0

    def run(txn: Any) -> int:
        meta = shared.dbs[META]
        if read_sealed(txn, meta) is None:
            return 0
        # The mark is the head the last sealed append started from: a main file
        # that lost exactly that append (and this seal) reads as its crash, as
        # it would without the seal; one that lost more is refused.
        base = last_recent_base(txn, meta)
        items = take_recent(txn, shared.dbs, shared.segments.reveal)
        overwritten = shared.segments.write(items, base=base)
        crashpoint("seal: payloads in the segments, not yet out of recent")
        if overwritten:  # leftovers of an append that never committed were replaced
            write_int_set(txn, meta, DIRTY, read_int_set(txn, meta, DIRTY) | overwritten)
        return len(items)

    moved = shared.write(run)
    shared.segments.own_recent.clear()  # sealed: no read finds them in ``recent`` again
    return moved
