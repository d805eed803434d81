"""How the search index fits the store: the shard count for a log's size, each
shard writer's indexing memory, and the passes a long catch-up takes so the
writers of one pass stay within their budget."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["MOST_SHARDS", "ONE_PASS_EVENTS", "SHARD_EVENTS", "WRITER_HEAP", "return_freed_memory",
           "search_passes", "shards_for", "writer_heap"]

WRITER_HEAP = 64 << 20  # a shard writer's indexing memory when few shards share the budget
_HEAP_BUDGET = 256 << 20  # every shard writer of a pass together (16 shards: 16 MB each)
_HEAP_MIN = 16 << 20
SHARD_EVENTS = 1 << 15  # log events per shard when the shard count fits the store
MOST_SHARDS = 32
ONE_PASS_EVENTS = 1 << 18  # records a catch-up indexes into every shard in one pass (search_passes)


def shards_for(events: int, most: int = MOST_SHARDS) -> int:
    """The shard count that fits a log of ``events`` events: one shard per
    :data:`SHARD_EVENTS` events, rounded up to a power of two, from 1 to ``most``.

    Each shard costs every search a fixed ~30 µs (its searcher, term counts,
    prefix terms, search and fast fields), so a small store wants one shard;
    a purge rebuilds a whole shard (about 40 µs a document on two cores, the
    documents and Tantivy together), so a large one wants small shards: 1M
    events give 32 shards of about 31k documents, which a purge rebuilds in
    about 1.2 s (16 shards: 1.9 s, over the 2-second delete). Counting events
    (not entries) makes the count a function of the log head, the same for
    live updates and for a replay.
    """
    wanted = -(-max(events, 1) // SHARD_EVENTS)
    return min(max(1, most), 1 << (wanted - 1).bit_length())


def writer_heap(shards: int) -> int:
    """Each shard writer's indexing memory: :data:`WRITER_HEAP`, less when many
    shards would together hold more than ``_HEAP_BUDGET`` (a replay at 1M fills
    all 32, 16 a pass), never under Tantivy's minimum of 15 MB a thread."""
    return max(_HEAP_MIN, min(WRITER_HEAP, _HEAP_BUDGET // max(1, shards)))


def search_passes(marks: Sequence[int], head: int, start: int) -> list[list[int]]:
    """The shards each pass over the records ``start + 1`` to ``head`` indexes:
    those behind ``head`` (``marks``: each shard's checkpoint), at most as
    many a pass as :data:`_HEAP_BUDGET` holds writers. A replay at 1M fills
    all 32 shards: their writers (16 MB each, Tantivy's floor being 15 MB)
    would hold up to 512 MB, so it indexes 16 shards a pass and reads the
    log twice. A range under :data:`ONE_PASS_EVENTS` cannot fill the
    arenas and takes one pass. There is always one pass when ``start`` is
    behind ``head`` (it feeds the vectors), none otherwise."""
    if start >= head:
        return []
    behind = [i for i, mark in enumerate(marks) if mark < head]
    per_pass = max(1, _HEAP_BUDGET // writer_heap(len(marks)))
    if head - start < ONE_PASS_EVENTS or len(behind) <= per_pass:
        return [behind]
    return [behind[k:k + per_pass] for k in range(0, len(behind), per_pass)]


def return_freed_memory() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``;
    nothing where there is none). The shard writers of a pass free their
    indexing memory when they commit, but glibc keeps it in their threads'
    malloc arenas, where the next pass's threads did not reuse it: a 1M
    replay's second pass peaked at 619 MB of anonymous memory without this,
    491 MB with it (phase peaks of one replay, sampled). A long views
    catch-up calls it too: the views' freed heap stays in the main thread's
    arena, which the writers' threads do not reuse."""
    try:
        import ctypes  # (here: a Python without ctypes or dlopen still runs memlog)

        trim = ctypes.CDLL(None).malloc_trim
    except (ImportError, OSError, AttributeError):
        return
    trim.argtypes = [ctypes.c_size_t]
    trim(0)
