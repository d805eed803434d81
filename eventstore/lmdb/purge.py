"""The log's physical purge: only the payload segments that held erased
payloads are rewritten (see :mod:`eventstore.storage.compact` for the steps);
the log's main environment never holds content in the clear: recent payloads
are sealed into the segments first, then each rewritten segment loses its key,
so what the main environment's freed pages keep of them cannot be revealed
(:mod:`.recent`)."""

from __future__ import annotations

import time

from ..backend import PurgeReport
from ..storage.compact import Swap, sweep_scratch
from ..storage.safety import crashpoint
from .layout import DIRTY, META, read_head_state, read_int_set, write_int_set
from .logenv import LogEnv, finish_erasures
from .seal import seal_all

__all__ = ["purge_log"]

def purge_log(shared: LogEnv, timeout: float) -> PurgeReport:
    """Finish pending erasures, seal the recent payloads, drop payloads of
    appends that never committed, and rewrite every payload segment holding
    freed payload bytes, without its key."""
    started = time.perf_counter()
    swap = Swap(shared)
    with shared.lock.exclusive(timeout):
        for directory in (shared.path, *shared.path.glob("seg-*")):
            sweep_scratch(directory)
        if shared.env is None:
            shared.reopen()
        crashpoint("log: finish erasures")
        finish_erasures(shared)
        crashpoint("log: seal the recent payloads")
        seal_all(shared)
        head = shared.read(lambda txn: read_head_state(txn, shared.dbs[META]).seq)
        dirty = shared.read(lambda txn: read_int_set(txn, shared.dbs[META], DIRTY))
        dirty |= shared.segments.drop_after(head)
        segments = shared.segments
        try:
            for index in sorted(dirty):
                env = segments.env(index)
                if env is not None:
                    # Every other process reopens (and forgets the key it cached)
                    # before this key is gone, even if the rewrite then fails.
                    swap.bump()
                    crashpoint("log: drop the segment's key")
                    segments.drop_key(index)
                    swap.rewrite(env, [None], segments.path(index),
                                 lambda i=index: segments.close(i))
            crashpoint("log: clear the dirty segments")
            shared.write(lambda txn: write_int_set(txn, shared.dbs[META], DIRTY, set()))
        finally:
            generation = swap.finish()
    return swap.report(generation, started)

