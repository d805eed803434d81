"""Hypothesis strategies for every event of the catalogue."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from eventstore import (
    ENTRY_KINDS,
    EVENT_TYPES,
    DecisionDetails,
    DeletedRef,
    DeletionCriteria,
    EntryChanges,
    EntryRecorded,
    Event,
    FindingDetails,
    MessageDetails,
    PreferenceDetails,
    ResourceBlock,
    ResourceSpec,
    TaskDetails,
)

ids = st.from_regex(r"[a-z0-9][a-z0-9._:-]{0,20}", fullmatch=True)
labels = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=20)
texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=200)
micros = st.integers(min_value=0, max_value=4_000_000_000_000_000)
units = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
keys = st.from_regex(r"[a-z][a-z0-9_]{0,30}", fullmatch=True)
levels = st.sampled_from(["low", "medium", "high", "critical"])
details = st.one_of(
    st.none(),
    st.builds(MessageDetails, topic=st.none() | labels, parent_id=st.none() | ids),
    st.builds(DecisionDetails, rationale=st.none() | texts, alternatives=st.tuples(texts),
              impact=st.none() | levels, made_by=st.none() | labels),
    st.builds(FindingDetails, severity=st.none() | levels, evidence=st.none() | texts),
    st.builds(PreferenceDetails, key=labels, value=texts, confidence=st.none() | units),
    st.builds(TaskDetails, done=st.booleans()),
)
_overrides: dict[str, dict[str, Any]] = {
    "entry.recorded": dict(
        entry_id=ids, kind=st.sampled_from(ENTRY_KINDS), content=texts, occurred_at=micros,
        tags=st.lists(labels, max_size=3).map(tuple), importance=st.none() | units,
        derived_from=st.lists(ids, max_size=2).map(tuple), details=details,
        redactions=st.dictionaries(st.sampled_from(["email", "api_key"]), st.integers(0, 9)),
    ),
    "entry.updated": dict(entry_id=ids, changes=st.builds(
        EntryChanges, done=st.none() | st.booleans(), importance=st.none() | units)),
    "entry.edited": dict(entry_id=ids, content=texts, redactions=st.dictionaries(
        st.sampled_from(["email", "api_key"]), st.integers(0, 9))),
    "memory.saved": dict(user_id=ids, key=keys, content=texts, memory_id=ids),
    "memory.forgotten": dict(user_id=ids, key=keys, memory_id=ids),
    "decay.applied": dict(as_of=micros, rates=st.dictionaries(
        st.sampled_from(ENTRY_KINDS), st.floats(0, 5, allow_nan=False)), floor=units),
    "deletion.requested": dict(request_id=ids, reason=texts, requested_by=ids,
                               criteria=st.builds(DeletionCriteria, ids=st.lists(ids).map(tuple))),
    "entries.deleted": dict(request_id=ids, entry_ids=st.lists(ids).map(tuple),
                            erased_seqs=st.lists(st.integers(1, 10**9)).map(tuple),
                            refs=st.lists(st.builds(DeletedRef, entry_id=ids, kind=labels,
                                                    recorded_seq=st.integers(1, 10**9))).map(tuple)),
    "entry.redacted": dict(entry_id=ids, target_seq=st.integers(1, 10**9), reason=texts,
                           requested_by=ids, spans=st.dictionaries(labels, st.integers(0, 9)),
                           redacted=st.none() | st.builds(EntryRecorded, entry_id=ids,
                                                          kind=st.sampled_from(ENTRY_KINDS),
                                                          content=texts, occurred_at=micros)),
    "purge.completed": dict(request_ids=st.lists(ids).map(tuple), bytes_scanned=st.integers(0, 2**62),
                            files_rewritten=st.lists(labels).map(tuple),
                            seconds=st.floats(0, 100, allow_nan=False)),
    "session.compacted": dict(session_id=ids, policy=labels, summary_entry_id=st.none() | ids,
                              removed_entry_ids=st.lists(ids).map(tuple),
                              bytes_before=st.integers(0, 2**62), bytes_after=st.integers(0, 2**62)),
    "retention.applied": dict(as_of=micros, request_id=st.none() | ids,
                              policy=st.dictionaries(st.sampled_from(ENTRY_KINDS),
                                                     st.integers(0, 999))),
    "entries.accessed": dict(entry_ids=st.lists(ids, min_size=1).map(tuple), at=micros),
    # -- compaction and summaries --
    "session.summarised": dict(session_id=ids, summary_entry_id=ids, policy=labels,
                               summarised_entry_ids=st.lists(ids).map(tuple),
                               tokens_before=st.integers(0, 2**62), tokens_after=st.integers(0, 2**62)),
    "summary.resummarised": dict(summary_entry_id=ids, replaced_entry_id=ids,
                                 source_entry_ids=st.lists(ids).map(tuple), session_id=st.none() | ids,
                                 request_id=st.none() | ids),
    # -- memory resources --
    "resource.declared": dict(spec=st.builds(
        ResourceSpec, id=st.from_regex(r"[a-z][a-z0-9_-]{0,20}", fullmatch=True), key=labels,
        token_limit=st.integers(1, 10**9), flush_threshold=units, flush_fraction=units,
        ttl_seconds=st.none() | st.integers(1, 10**6), context_ratio=units, shared=st.booleans(),
        blocks=st.lists(st.builds(ResourceBlock, name=keys, priority=st.integers(0, 1000),
                                  ratio=st.none() | units, max_tokens=st.none() | st.integers(1, 10**6)),
                        max_size=3).map(tuple))),
    "resource.appended": dict(resource_id=keys, key=ids, entry_id=ids, block=keys),
    "resource.flushed": dict(resource_id=keys, key=ids, block=keys,
                             removed_entry_ids=st.lists(ids).map(tuple), summary_entry_id=ids,
                             tokens_before=st.integers(0, 2**62), tokens_after=st.integers(0, 2**62)),
    "resource.evicted": dict(resource_id=keys, key=ids, removed_entry_ids=st.lists(ids).map(tuple),
                             reason=labels, tokens_before=st.integers(0, 2**62),
                             tokens_after=st.integers(0, 2**62)),
    "resource.trimmed": dict(resource_id=keys, key=ids, removed_entry_ids=st.lists(ids).map(tuple),
                             tokens_before=st.integers(0, 2**62), tokens_after=st.integers(0, 2**62)),
    "resource.replaced": dict(resource_id=keys, key=ids, removed_entry_ids=st.lists(ids).map(tuple)),
    # -- formation --
    "entry.reinforced": dict(entry_id=ids, at=micros, by_entry_id=ids, similarity=units,
                             session_id=st.none() | ids),
    "session.extracted": dict(session_id=ids, upto_seq=st.integers(0, 2**62), messages=st.integers(0, 2**62),
                              entry_ids=st.lists(ids).map(tuple), trigger=st.none() | labels),
    # -- upkeep --
    "checkpoint.marked": dict(checkpoint_id=ids, session_id=ids, at=micros, user_id=st.none() | ids,
                              agent_id=st.none() | ids, model_id=st.none() | labels,
                              chat_id=st.none() | labels),
}
_id_fields = {"session_id": ids, "user_id": ids}


def event_strategy(tag: str) -> st.SearchStrategy[Event]:
    """Valid events of one type."""
    cls = EVENT_TYPES[tag]
    kwargs = _overrides.get(tag) or {
        name: _id_fields.get(name, ids) for name in cls.__struct_fields__ if name == "session_id"
    }
    return st.builds(cls, **kwargs)


events = st.sampled_from(sorted(EVENT_TYPES)).flatmap(event_strategy)
