"""The event catalogue: every fact memlog records, in the past tense.

Each event is a frozen msgspec Struct with a dotted ``type`` tag. Events are the
*payload* of a log record: the content-bearing part, stored apart from the
envelope and erasable. Times are integer microseconds since the Unix epoch, UTC.

Evolution rules: add fields only at the end and with defaults, never reuse a
tag, never reorder fields. Bump ``SCHEMA_VERSIONS[tag]`` and register an
upcaster (see :mod:`eventstore.codec`) when an old shape must be rewritten.
"""

from __future__ import annotations

from typing import Annotated, Final, TypeAlias

import msgspec
from msgspec import Meta

from .fields import ID_PATTERN, Count, Days, Id, Label, Micros, Rate, Seq, Text, Unit
from .resource_events import (
    ResourceAppended,
    ResourceDeclared,
    ResourceEvicted,
    ResourceFlushed,
    ResourceReplaced,
    ResourceTrimmed,
)
from .specs import ResourceBlock, ResourceSpec
from .vocabulary import EntryKind, FindingStatus, Level, Role

__all__ = [
    "EVENT_TYPES",
    "ID_PATTERN",
    "SCHEMA_VERSIONS",
    "CheckpointMarked",
    "DecayApplied",
    "DecisionDetails",
    "DeletedRef",
    "DeletionCriteria",
    "DeletionRequested",
    "Details",
    "EntriesAccessed",
    "EntriesDeleted",
    "EntryChanges",
    "EntryEdited",
    "EntryRecorded",
    "EntryRedacted",
    "EntryReinforced",
    "EntryUpdated",
    "Event",
    "FindingDetails",
    "MemoryForgotten",
    "MemorySaved",
    "MessageDetails",
    "PreferenceDetails",
    "PurgeCompleted",
    "RedactionNote",
    "ResourceAppended",
    "ResourceBlock",
    "ResourceDeclared",
    "ResourceEvicted",
    "ResourceFlushed",
    "ResourceReplaced",
    "ResourceSpec",
    "ResourceTrimmed",
    "RetentionApplied",
    "SessionArchived",
    "SessionClosed",
    "SessionCompacted",
    "SessionExtracted",
    "SessionRestored",
    "SessionStarted",
    "SessionSummarised",
    "SessionUpdated",
    "SummaryResummarised",
    "TaskDetails",
]

# --- per-kind details of an entry -------------------------------------------

class MessageDetails(msgspec.Struct, frozen=True, gc=False, tag="message", tag_field="kind"):
    """Conversation context of a message (seed 000)."""

    topic: Label | None = None
    parent_id: Id | None = None
    conversation_id: Id | None = None
    tool_call_id: Id | None = None  # the call a tool message answers (seed 001)


class DecisionDetails(msgspec.Struct, frozen=True, gc=False, tag="decision", tag_field="kind"):
    """Why a decision was made and who approved it (seed 000)."""

    rationale: str | None = None
    alternatives: tuple[str, ...] = ()
    impact: Level | None = None
    made_by: Label | None = None
    approved_by: tuple[Label, ...] = ()
    # The reason each alternative was rejected, by position ("" for none; may be
    # shorter than ``alternatives``): decisions recorded before it have none.
    rejected_reasons: tuple[str, ...] = ()


class FindingDetails(msgspec.Struct, frozen=True, gc=False, tag="finding", tag_field="kind"):
    """Severity, evidence and status of a finding (seed 000)."""

    severity: Level | None = None
    category: Label | None = None
    evidence: str | None = None
    recommendation: str | None = None
    status: FindingStatus = "open"


class PreferenceDetails(msgspec.Struct, frozen=True, gc=False, tag="preference", tag_field="kind"):
    """A user-scoped preference: key, value, category and confidence."""

    key: Label
    value: str
    category: Label | None = None
    confidence: Unit | None = None


class TaskDetails(msgspec.Struct, frozen=True, gc=False, tag="task", tag_field="kind"):
    """Whether a task is done."""

    done: bool = False


Details: TypeAlias = MessageDetails | DecisionDetails | FindingDetails | PreferenceDetails | TaskDetails


class EntryChanges(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """Fields changed by an update; ``None`` means unchanged."""

    status: FindingStatus | None = None
    done: bool | None = None
    importance: Unit | None = None
    tags: tuple[Label, ...] | None = None


class DeletionCriteria(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """What a deletion request selects; ids and filters, never content."""

    ids: tuple[Id, ...] = ()
    session_id: Id | None = None
    user_id: Id | None = None
    kinds: tuple[EntryKind, ...] = ()
    tags: tuple[Label, ...] = ()
    before: Micros | None = None
    after: Micros | None = None
    include_derived: bool = True


# --- the catalogue ------------------------------------------------------------

class SessionStarted(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="session.started"):
    """A session began for a user with a set of agents."""

    session_id: Id
    user_id: Id | None = None
    agent_ids: tuple[Id, ...] = ()
    tags: tuple[Label, ...] = ()
    metadata: dict[str, str] = {}
    channel: Label | None = None
    # -- upkeep: pruned by age and count (seed 004's hook sessions)
    ephemeral: bool = False


class SessionUpdated(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="session.updated"):
    """A session's agents, tags or metadata changed."""

    session_id: Id
    agent_ids: tuple[Id, ...] | None = None
    tags: tuple[Label, ...] | None = None
    metadata: dict[str, str] | None = None


class SessionArchived(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="session.archived"):
    """A session was archived and leaves default search and context."""

    session_id: Id
    reason: str | None = None


class SessionClosed(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="session.closed"):
    """A session was closed: it takes no new entries, and stays readable."""

    session_id: Id
    reason: str | None = None


class SessionRestored(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="session.restored"):
    """An archived session was restored."""

    session_id: Id
    # -- upkeep: why, e.g. an automatic restore on a write or a read
    reason: str | None = None


class EntryRecorded(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="entry.recorded"):
    """An entry (message, decision, finding, ...) was recorded."""

    entry_id: Id
    kind: EntryKind
    content: Text
    occurred_at: Micros
    session_id: Id | None = None
    user_id: Id | None = None
    agent_id: Id | None = None
    role: Role | None = None
    tags: tuple[Label, ...] = ()
    importance: Unit | None = None
    derived_from: tuple[Id, ...] = ()
    details: Details | None = None
    redactions: dict[str, int] = {}


class EntryUpdated(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="entry.updated"):
    """Some fields of an entry changed: a task done, a finding's status."""

    entry_id: Id
    changes: EntryChanges


class EntryEdited(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="entry.edited"):
    """An entry's text was replaced by ``content``; the earlier texts stay in the log."""

    entry_id: Id
    content: Text
    redactions: dict[str, int] = {}
    tags: tuple[Label, ...] | None = None  # the tags from now on (given and new hashtags); None: as before


class MemorySaved(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="memory.saved"):
    """A user explicitly asked memlog to remember something under a key."""

    user_id: Id
    key: Annotated[str, Meta(pattern=r"^[a-z][a-z0-9_]{0,63}\Z")]
    content: Text
    memory_id: Id
    session_id: Id | None = None
    redactions: dict[str, int] = {}


class MemoryForgotten(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="memory.forgotten"):
    """A user memory was forgotten by key."""

    user_id: Id
    key: Annotated[str, Meta(pattern=r"^[a-z][a-z0-9_]{0,63}\Z")]
    memory_id: Id


class EntriesAccessed(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="entries.accessed"):
    """Entries were returned to a reader; feeds the decay access boost."""

    entry_ids: tuple[Id, ...]
    at: Micros


class DecayApplied(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="decay.applied"):
    """Decay parameters in force from ``as_of`` on."""

    as_of: Micros
    rates: dict[str, Rate]
    floor: Unit = 0.1
    access_boost: Rate = 0.1
    importance_boost: Rate = 0.2


class RedactionNote(msgspec.Struct, frozen=True, gc=False):
    """What a later redaction keeps of an earlier one whose payload it erased:
    where it was recorded, the spans per pattern, why and by whom; no content."""

    seq: Seq
    spans: dict[str, int]
    reason: Text
    requested_by: Id


class EntryRedacted(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="entry.redacted"):
    """Spans were removed from an entry; the original payload was erased."""

    entry_id: Id
    target_seq: Seq
    spans: dict[str, int]
    reason: Text
    requested_by: Id
    redacted: EntryRecorded | None = None
    # A redaction of an entry already redacted erases the earlier redaction's
    # payload (it holds the remaining text): the notes of every earlier
    # redaction of the entry, oldest first, are carried here for history.
    prior: tuple[RedactionNote, ...] = ()


class DeletedRef(msgspec.Struct, frozen=True, gc=False):
    """What a tombstone keeps of a deleted item: ids, kind and where it was recorded."""

    entry_id: Id
    kind: Label
    recorded_seq: Seq
    session_id: Id | None = None


class DeletionRequested(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="deletion.requested"):
    """Someone asked for entries to be forgotten."""

    request_id: Id
    criteria: DeletionCriteria
    reason: Text
    requested_by: Id


class EntriesDeleted(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="entries.deleted"):
    """The tombstone: these entries and log payloads were erased."""

    request_id: Id
    entry_ids: tuple[Id, ...]
    erased_seqs: tuple[Seq, ...]
    counts_by_kind: dict[str, int] = {}
    refs: tuple[DeletedRef, ...] = ()


class PurgeCompleted(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="purge.completed"):
    """Deleted content was physically rewritten out of every file."""

    request_ids: tuple[Id, ...]
    files_rewritten: tuple[str, ...]
    bytes_scanned: Count
    verified: bool
    seconds: Rate = 0.0
    # What the verification checked, what it found where (file: hits; never
    # content) and what was done about it.
    checks: tuple[str, ...] = ()
    findings: tuple[str, ...] = ()
    action: str | None = None


class SessionCompacted(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="session.compacted"):
    """Low-relevance entries of a session were folded into a summary."""

    session_id: Id
    policy: Label
    removed_entry_ids: tuple[Id, ...]
    summary_entry_id: Id | None
    bytes_before: Count
    bytes_after: Count


class RetentionApplied(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="retention.applied"):
    """Per-kind retention ran as of a time, as deletion request ``request_id``."""

    as_of: Micros
    policy: dict[str, Days]
    request_id: Id | None = None
    # -- upkeep: retention by count: the most of each kind kept per
    # scope, and the scope (``<user>/<agent>``, ids; empty parts when none)
    max_counts: dict[str, Count] = {}
    scope: str | None = None


# -- compaction and summaries --

class SessionSummarised(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="session.summarised"):
    """A session's oldest messages were summarised; the summary stands for them in the context."""

    session_id: Id
    summary_entry_id: Id
    summarised_entry_ids: tuple[Id, ...]
    policy: Label
    tokens_before: Count = 0
    tokens_after: Count = 0


class SummaryResummarised(msgspec.Struct, frozen=True, gc=False, tag_field="type",
                          tag="summary.resummarised"):
    """A summary deleted with one of its sources was written again from the sources that remain."""

    summary_entry_id: Id
    replaced_entry_id: Id
    source_entry_ids: tuple[Id, ...]
    session_id: Id | None = None
    request_id: Id | None = None
# -- memory resources: in :mod:`eventstore.resource_events` --

# -- formation --
# Ids, counts and figures only, never content.

class EntryReinforced(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="entry.reinforced"):
    """A near copy of a live lesson of its scope reinforced it instead of being added."""

    # Seed 004's dedup: Jaccard of word sets at or above the threshold; the
    # views count it as an access of the lesson.

    entry_id: Id  # the lesson reinforced
    at: Micros
    by_entry_id: Id  # the id the new write would have had (it was not recorded)
    similarity: Unit = 1.0
    session_id: Id | None = None  # the session of the write, when it had one


class SessionExtracted(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="session.extracted"):
    """Rule-based extraction (seed 002) read a session's messages up to ``upto_seq``."""

    # It wrote ``entry_ids`` (decisions, lessons) from them, in the same append.

    session_id: Id
    upto_seq: Count = 0  # the last message seq read (the next run starts after it)
    messages: Count = 0  # how many messages this run read
    entry_ids: tuple[Id, ...] = ()
    trigger: Label | None = None  # close, extract, maintain
# -- upkeep --

class CheckpointMarked(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="checkpoint.marked"):
    """A point of a session to recover from (seed 002): ids and labels; recovery reads the log as of it."""

    checkpoint_id: Id
    session_id: Id
    at: Micros
    user_id: Id | None = None
    agent_id: Id | None = None
    model_id: Label | None = None
    chat_id: Label | None = None


Event: TypeAlias = (
    SessionStarted
    | SessionUpdated
    | SessionArchived
    | SessionRestored
    | EntryRecorded
    | EntryUpdated
    | EntryEdited
    | MemorySaved
    | MemoryForgotten
    | EntriesAccessed
    | DecayApplied
    | EntryRedacted
    | DeletionRequested
    | EntriesDeleted
    | PurgeCompleted
    | SessionCompacted
    | RetentionApplied
    | SessionClosed
    # -- compaction and summaries --
    | SessionSummarised
    | SummaryResummarised
    # -- memory resources --
    | ResourceDeclared
    | ResourceAppended
    | ResourceFlushed
    | ResourceEvicted
    | ResourceTrimmed
    | ResourceReplaced
    # -- formation --
    | EntryReinforced
    | SessionExtracted
    # -- upkeep --
    | CheckpointMarked
)

EVENT_TYPES: Final[dict[str, type[Event]]] = {
    cls.__struct_config__.tag: cls
    for cls in Event.__args__
}

# The current schema version of each event type; bump with an upcaster.
SCHEMA_VERSIONS: Final[dict[str, int]] = dict.fromkeys(EVENT_TYPES, 1)
