"""Read-model values: what the views hold for each entity version.

Every value is a frozen msgspec Struct stored as msgpack. An entity version is
current from the seq it was written at until the next version's seq, so an
as-of read is a lookup of the last version at or before the asked seq.

The views hold no entry content: an entry version is stored as a
:class:`StoredEntry` (ids, seqs, state, what the writer needs) and a reader
turns it into the public :class:`EntryView` by reading the entry from the log
payload at ``source_seq`` and applying the accumulated ``changes``.
"""

from __future__ import annotations

import msgspec

from eventstore import EntryChanges, EntryRecorded, EntryState, MemoryState

__all__ = [
    "AGENT_UNKNOWN",
    "DEFAULT_RATES",
    "AccessView",
    "CheckpointView",
    "DecayParams",
    "DeletionRecord",
    "EntryView",
    "MemoryView",
    "RedactionInfo",
    "Reinforcement",
    "ResourceActivity",
    "ResourceItem",
    "ResourceState",
    "SessionStats",
    "SessionView",
    "StoredEntry",
    "SupersededInfo",
    "TombstoneInfo",
]



class TombstoneInfo(msgspec.Struct, frozen=True, gc=False):
    """Why and when something was deleted (ids and reasons, never content)."""

    request_id: str
    reason: str
    requested_by: str
    seq: int
    at: int


class RedactionInfo(msgspec.Struct, frozen=True, gc=False):
    """That spans were removed, by whom and why; never the removed text."""

    spans: dict[str, int]
    reason: str
    requested_by: str
    seq: int
    at: int


class SupersededInfo(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """That a later item of the same user and key replaced this one: the
    superseding id, and the seq and time of its record."""

    by: str
    seq: int
    at: int


class EntryView(msgspec.Struct, frozen=True, gc=False):
    """One version of an entry, as readers get it (the views store a
    :class:`StoredEntry`). ``entry`` is None once deleted, or when its log
    payload is gone."""

    entry_id: str
    kind: str
    state: EntryState
    entry: EntryRecorded | None
    recorded_seq: int
    recorded_at: int
    changed_seq: int
    session_id: str | None = None
    user_id: str | None = None
    occurred_at: int = 0
    deleted: TombstoneInfo | None = None
    redacted: RedactionInfo | None = None
    superseded: SupersededInfo | None = None  # a later preference of the same user and key
    edits: tuple[int, ...] = ()  # the seqs of its entry.edited events, oldest first


class StoredEntry(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """One version of an entry as the views store it: every field of
    :class:`EntryView` but the entry itself, which stays in the log.

    ``source_seq`` is the seq of the event whose payload carries the entry (its
    ``entry.recorded``, or for a redacted entry the ``entry.redacted``, whose
    payload's ``redacted`` is the entry); 0 when there is none (deleted).
    ``changes`` accumulates every ``entry.updated`` applied since (later fields
    win). ``size`` (content bytes), ``importance`` (the entry's own, after the
    changes) and ``level`` (impact or severity of its details) let the writer
    keep statistics and ranking values without reading the log; ``agent_id``
    (the entry's writer) lets readers count by agent the same way
    (:data:`AGENT_UNKNOWN` in a version stored before it was kept). ``edits`` are
    the seqs of the ``entry.edited`` events applied since the source, oldest
    first: the last one's payload carries the current content.
    """

    entry_id: str
    kind: str
    state: EntryState
    recorded_seq: int
    recorded_at: int
    changed_seq: int
    source_seq: int = 0
    changes: EntryChanges | None = None
    size: int = 0
    importance: float | None = None
    level: str | None = None
    session_id: str | None = None
    user_id: str | None = None
    occurred_at: int = 0
    deleted: TombstoneInfo | None = None
    redacted: RedactionInfo | None = None
    superseded: SupersededInfo | None = None  # a later preference of the same user and key
    agent_id: str | None = ""  # AGENT_UNKNOWN: stored before the field was kept
    edits: tuple[int, ...] = ()


# The agent_id of a StoredEntry stored before it was kept (no id is empty): read the log's.
AGENT_UNKNOWN = ""


class SessionView(msgspec.Struct, frozen=True, gc=False):
    """One version of a session's manifest."""

    session_id: str
    user_id: str | None
    agent_ids: tuple[str, ...]
    tags: tuple[str, ...]
    metadata: dict[str, str]
    channel: str | None
    archived: bool
    started_at: int
    started_seq: int
    changed_seq: int
    closed_at: int | None = None  # recorded_at of its session.closed
    # -- upkeep --
    ephemeral: bool = False  # started ephemeral: pruned by age and count
    restored_at: int = 0  # recorded_at of its last session.restored (idle counts from it too)


class SessionStats(msgspec.Struct, frozen=True, gc=False):
    """Seed 000's manifest statistics, kept current."""

    counts: dict[str, int] = {}
    entries: int = 0
    bytes: int = 0
    last_activity: int = 0


class MemoryView(msgspec.Struct, frozen=True, gc=False):
    """One version of a user memory (seed 001)."""

    user_id: str
    key: str
    memory_id: str
    content: str | None
    state: MemoryState
    saved_seq: int
    saved_at: int
    changed_seq: int
    superseded: SupersededInfo | None = None  # derived on read: a later save under the key
    session_id: str | None = None  # the session it was said in, if the save named one


class RankInputs(msgspec.Struct, frozen=True, gc=False):
    """What ranking needs of a current entry, kept beside its recorded seq."""

    entry_id: str
    kind: str
    importance: float
    occurred_at: int


class AccessView(msgspec.Struct, frozen=True, gc=False):
    """How often and when an entry was last returned to a reader."""

    count: int = 0
    last_at: int = 0


# Seed 000's per-kind rates (per hour), extended to every entry kind.
DEFAULT_RATES = {
    "message": 0.1, "decision": 0.02, "finding": 0.05, "preference": 0.01,
    "lesson": 0.02, "task": 0.05, "handoff": 0.05, "summary": 0.02, "project": 0.005,
}


class DecayParams(msgspec.Struct, frozen=True, gc=False):
    """Decay parameters in force (seed 000's defaults until decay.applied)."""

    rates: dict[str, float] = msgspec.field(default_factory=lambda: dict(DEFAULT_RATES))
    floor: float = 0.1
    access_boost: float = 0.1
    importance_boost: float = 0.2
    as_of: int = 0


class DeletionRecord(msgspec.Struct, frozen=True, gc=False):
    """The deletion ledger: one request from ask to verified purge."""

    request_id: str
    reason: str
    requested_by: str
    criteria: dict[str, object]
    requested_seq: int
    requested_at: int
    entry_ids: tuple[str, ...] = ()
    erased_seqs: tuple[int, ...] = ()
    counts_by_kind: dict[str, int] = {}
    deleted_seq: int | None = None
    deleted_at: int | None = None
    purge_seq: int | None = None
    purged_at: int | None = None
    purge_verified: bool | None = None
    files_rewritten: tuple[str, ...] = ()


# -- memory resources --

class ResourceItem(msgspec.Struct, frozen=True, gc=False):
    """One item of a resource: the entry that holds it, its block, the seq it joined at."""

    entry_id: str
    block: str
    seq: int


class ResourceState(msgspec.Struct, frozen=True, gc=False):
    """A resource instance (one key): its items in order (ids only, no content)."""

    resource_id: str
    key: str
    items: tuple[ResourceItem, ...] = ()
    changed_seq: int = 0
    flushes: int = 0
    evictions: int = 0


class ResourceActivity(msgspec.Struct, frozen=True, gc=False):
    """Across every resource: the last flush and eviction (seq, time) and their counts."""

    flushes: int = 0
    evictions: int = 0
    evicted_items: int = 0
    last_flush_seq: int | None = None
    last_flush_at: int | None = None
    last_eviction_seq: int | None = None
    last_eviction_at: int | None = None


# -- formation --

class Reinforcement(msgspec.Struct, frozen=True, gc=False):
    """How often a lesson was reinforced by a near copy (``entry.reinforced``),
    the last time, its similarity and the id the reinforcing write would have had."""

    count: int = 0
    last_at: int = 0
    last_similarity: float = 0.0
    last_by: str | None = None
# -- upkeep --

class CheckpointView(msgspec.Struct, frozen=True, gc=False):
    """A checkpoint as the views index it (``checkpoint.marked``: ids and labels)."""

    checkpoint_id: str
    session_id: str
    seq: int
    at: int
    user_id: str | None = None
    agent_id: str | None = None
    model_id: str | None = None
    chat_id: str | None = None
