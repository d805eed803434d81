"""Random histories of domain events, applied through the log, for property tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from eventstore import (
    CheckpointMarked,
    DecayApplied,
    DeletedRef,
    DeletionCriteria,
    DeletionRequested,
    EntriesAccessed,
    EntriesDeleted,
    EntryChanges,
    EntryEdited,
    EntryRecorded,
    EntryRedacted,
    EntryReinforced,
    EntryUpdated,
    EventLog,
    MemoryForgotten,
    MemorySaved,
    MessageDetails,
    PreferenceDetails,
    ResourceAppended,
    ResourceBlock,
    ResourceDeclared,
    ResourceEvicted,
    ResourceFlushed,
    ResourceReplaced,
    ResourceSpec,
    ResourceTrimmed,
    SessionArchived,
    SessionClosed,
    SessionCompacted,
    SessionExtracted,
    SessionRestored,
    SessionStarted,
    SessionSummarised,
    SessionUpdated,
    SummaryResummarised,
    TaskDetails,
)
from projections import Projections

WORDS = ["postgres", "cache", "latency", "schema", "deploy", "index", "queue", "retry", "alpha"]
KINDS = ["message", "decision", "finding", "lesson", "task", "handoff"]
QUERIES = ["postgres", "cache latency", "schem", "deploy -index", "retyr", "queue"]

steps = st.lists(
    st.one_of(
        st.tuples(st.just("entry"), st.integers(0, 2), st.sampled_from(KINDS),
                  st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)),
        st.tuples(st.just("update"), st.integers(0, 30), st.booleans()),
        # a new text: search, vectors and views show it from the edit on
        st.tuples(st.just("edit"), st.integers(0, 30),
                  st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)),
        st.tuples(st.just("access"), st.lists(st.integers(0, 30), min_size=1, max_size=3)),
        st.tuples(st.just("decay"), st.floats(0.001, 0.5)),
        st.tuples(st.just("remember"), st.sampled_from(["alice", "bob"]), st.sampled_from(["k1", "k2"]),
                  st.sampled_from(WORDS)),
        st.tuples(st.just("forget"), st.sampled_from(["alice", "bob"]), st.sampled_from(["k1", "k2"])),
        # a keyed entry: a preference set again supersedes the earlier one
        st.tuples(st.just("prefer"), st.sampled_from(["alice", "bob"]), st.sampled_from(["k1", "k2"]),
                  st.sampled_from(WORDS)),
        st.tuples(st.just("delete"), st.integers(0, 30)),
        st.tuples(st.just("redact"), st.integers(0, 30)),
        st.tuples(st.just("compact"), st.integers(0, 2)),
        st.tuples(st.just("archive"), st.integers(0, 2), st.booleans()),
        st.tuples(st.just("close"), st.integers(0, 2)),
        st.tuples(st.just("retag"), st.integers(0, 2), st.sampled_from(WORDS)),
        st.tuples(st.just("catch_up")),
        # -- compaction and summaries --
        st.tuples(st.just("summarise"), st.integers(0, 2), st.integers(1, 3)),
        st.tuples(st.just("resummarise"), st.integers(0, 30)),
        # -- memory resources --
        st.tuples(st.just("res_append"), st.integers(0, 1), st.sampled_from(["sys", "chat"]),
                  st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)),
        st.tuples(st.just("res_remove"), st.integers(0, 1),
                  st.sampled_from(["evicted", "trimmed", "replaced"]), st.integers(1, 3)),
        st.tuples(st.just("res_flush"), st.integers(0, 1)),
        st.tuples(st.just("res_declare"), st.sampled_from(["chat", "notes"]), st.integers(50, 500)),
        # -- formation --
        st.tuples(st.just("reinforce"), st.integers(0, 30), st.floats(0.8, 1.0)),
        st.tuples(st.just("extracted"), st.integers(0, 2)),
        # -- upkeep --
        st.tuples(st.just("checkpoint"), st.integers(0, 2), st.sampled_from([None, "a0", "a1"]),
                  st.sampled_from([None, "chat_abc123"])),
        st.tuples(st.just("ephemeral"), st.booleans()),
        st.tuples(st.just("restore_why"), st.integers(0, 2)),
    ),
    min_size=1, max_size=40,
)


class History:
    """Applies steps through the log the way the facade would."""

    def __init__(self, log: EventLog, proj: Projections) -> None:
        self.log = log
        self.proj = proj
        self.entries: list[tuple[str, int, str, str]] = []  # id, seq, kind, session
        self.memories: dict[tuple[str, str], str] = {}
        self.memory_ids: list[str] = []  # every memory saved, superseded ones included
        self.erased: set[str] = set()
        self.forgotten: set[tuple[str, str]] = set()
        self.edits: dict[str, list[int]] = {}  # entry id -> the seqs of its edits
        self.n = 0
        for i in range(3):
            log.append(f"session:s{i}", [SessionStarted(session_id=f"s{i}", user_id="alice")], actor="t")

    def run(self, step: tuple[Any, ...]) -> None:
        handler: Callable[..., None] = getattr(self, f"_{step[0]}")
        handler(*step[1:])

    def _entry(self, session: int, kind: str, words: list[str]) -> None:
        self.n += 1
        eid = f"e{self.n}"
        event = EntryRecorded(entry_id=eid, kind=kind, content=" ".join(words),  # type: ignore[arg-type]
                              occurred_at=1_700_000_000_000_000 + self.n * 3_600_000_000,
                              session_id=f"s{session}", agent_id=f"a{session}", tags=(kind,),
                              details=_details(kind, self.n))
        seq = self.log.append(f"session:s{session}", [event], actor="t").first_seq
        self.entries.append((eid, seq, kind, f"s{session}"))

    def _live(self, i: int) -> tuple[str, int, str, str] | None:
        live = [e for e in self.entries if e[0] not in self.erased]
        return live[i % len(live)] if live else None

    def _update(self, i: int, done: bool) -> None:
        if (target := self._live(i)) is not None:
            self.log.append("entries", [EntryUpdated(entry_id=target[0], changes=EntryChanges(
                done=done, importance=0.9 if done else 0.1))], actor="t")

    def _edit(self, i: int, words: list[str]) -> None:
        if (target := self._live(i)) is not None:
            stream = f"session:{target[3]}" if target[3] else "entries"
            event = EntryEdited(entry_id=target[0], content=" ".join(words))
            seq = self.log.append(stream, [event], actor="t").first_seq
            self.edits.setdefault(target[0], []).append(seq)

    def _access(self, picks: list[int]) -> None:
        ids = tuple(t[0] for i in picks if (t := self._live(i)) is not None)
        if ids:
            self.log.append("access", [EntriesAccessed(entry_ids=ids, at=1_700_000_000_000_000)],
                            actor="t")

    def _decay(self, rate: float) -> None:
        self.log.append("system", [DecayApplied(as_of=1_700_000_000_000_000,
                                                rates={"message": rate})], actor="t")

    def _remember(self, user: str, key: str, word: str) -> None:
        self.n += 1
        self.log.append(f"user:{user}", [MemorySaved(user_id=user, key=key, content=word,
                                                     memory_id=f"m{self.n}")], actor="t")
        self.memories[(user, key)] = f"m{self.n}"
        self.memory_ids.append(f"m{self.n}")

    def _prefer(self, user: str, key: str, word: str) -> None:
        self.n += 1
        eid = f"p{self.n}"
        event = EntryRecorded(entry_id=eid, kind="preference", content=f"{key}: {word}",
                              occurred_at=1_700_000_000_000_000 + self.n * 3_600_000_000, user_id=user,
                              details=PreferenceDetails(key=key, value=word))
        seq = self.log.append(f"user:{user}", [event], actor="t").first_seq
        self.entries.append((eid, seq, "preference", ""))

    def _forget(self, user: str, key: str) -> None:
        if (mid := self.memories.pop((user, key), None)) is not None:
            self.forgotten.add((user, key))
            self.log.append(f"user:{user}", [MemoryForgotten(user_id=user, key=key, memory_id=mid)],
                            actor="t")

    def _delete(self, i: int) -> None:
        if (target := self._live(i)) is None:
            return
        eid, seq, kind, session = target
        self.n += 1
        rid = f"r{self.n}"
        self.log.append("system", [DeletionRequested(request_id=rid, reason="test", requested_by="t",
                                                     criteria=DeletionCriteria(ids=(eid,)))], actor="t")
        tomb = EntriesDeleted(request_id=rid, entry_ids=(eid,), erased_seqs=(seq,),
                              refs=(DeletedRef(eid, kind, seq, session or None),))
        self.log.erase([seq, *self.edits.get(eid, ())], tomb, stream="system", actor="t")
        self.erased.add(eid)

    def _redact(self, i: int) -> None:
        if (target := self._live(i)) is None:
            return
        eid, seq, kind, _session = target
        with self.proj.read() as views:
            view = views.entry(eid)
        assert view is not None and view.entry is not None
        import msgspec

        redacted = msgspec.structs.replace(view.entry, content="[REDACTED] " + kind)
        event = EntryRedacted(entry_id=eid, target_seq=seq, spans={"custom": 1}, reason="r",
                              requested_by="t", redacted=redacted)
        self.log.erase([seq, *self.edits.get(eid, ())], event, stream="system", actor="t")
        self.erased.add(eid)

    def _compact(self, session: int) -> None:
        ids = tuple(e[0] for e in self.entries if e[3] == f"s{session}" and e[0] not in self.erased)
        if ids:
            self.log.append(f"session:s{session}", [SessionCompacted(
                session_id=f"s{session}", policy="test", removed_entry_ids=ids[:1],
                summary_entry_id=None, bytes_before=10, bytes_after=5)], actor="t")

    def _archive(self, session: int, archived: bool) -> None:
        event = (SessionArchived(session_id=f"s{session}") if archived
                 else SessionRestored(session_id=f"s{session}"))
        self.log.append(f"session:s{session}", [event], actor="t")

    def _close(self, session: int) -> None:
        self.log.append(f"session:s{session}", [SessionClosed(session_id=f"s{session}", reason="r")],
                        actor="t")

    def _retag(self, session: int, word: str) -> None:
        self.log.append(f"session:s{session}", [SessionUpdated(
            session_id=f"s{session}", tags=(word,), metadata={"k": word})], actor="t")

    def _catch_up(self) -> None:
        self.proj.catch_up(search=True)

    # -- compaction and summaries --

    def _summary(self, session: str, sources: tuple[str, ...]) -> EntryRecorded:
        self.n += 1
        return EntryRecorded(entry_id=f"sum{self.n}", kind="summary", content=f"summary {self.n} cache",
                             occurred_at=1_700_000_000_000_000 + self.n * 3_600_000_000,
                             session_id=session, derived_from=sources)

    def _summarise(self, session: int, count: int) -> None:
        sid = f"s{session}"
        ids = tuple(e[0] for e in self.entries if e[3] == sid and e[0] not in self.erased
                    and e[2] == "message")[:count]
        if not ids:
            return
        summary = self._summary(sid, ids)
        marked = SessionSummarised(session_id=sid, summary_entry_id=summary.entry_id,
                                   summarised_entry_ids=ids, policy="test", tokens_before=9, tokens_after=3)
        seq = self.log.append(f"session:{sid}", [summary, marked], actor="t").first_seq
        self.entries.append((summary.entry_id, seq, "summary", sid))

    def _resummarise(self, i: int) -> None:
        summaries = [e for e in self.entries if e[2] == "summary" and e[3]]  # a resource's has no session
        if not summaries:
            return
        old = summaries[i % len(summaries)]
        sources = tuple(e[0] for e in self.entries if e[3] == old[3] and e[2] == "message"
                        and e[0] not in self.erased)[:2]
        summary = self._summary(old[3], sources)
        again = SummaryResummarised(summary_entry_id=summary.entry_id, replaced_entry_id=old[0],
                                    source_entry_ids=sources, session_id=old[3], request_id="r0")
        seq = self.log.append(f"session:{old[3]}", [summary, again], actor="t").first_seq
        self.entries.append((summary.entry_id, seq, "summary", old[3]))

    # -- memory resources --

    def _res_items(self, key: int) -> list[str]:
        items: list[str] = self.__dict__.setdefault("resource_items", {}).setdefault(f"k{key}", [])
        return items

    def _res_append(self, key: int, block: str, words: list[str]) -> None:
        self.n += 1
        eid = f"e{self.n}"
        entry = EntryRecorded(entry_id=eid, kind="message", content=" ".join(words), role="user",
                              occurred_at=1_700_000_000_000_000 + self.n * 3_600_000_000,
                              user_id="alice", tags=("resource:chat", f"block:{block}"))
        seq = self.log.append(f"resource:k{key}", [entry, ResourceAppended(
            resource_id="chat", key=f"k{key}", entry_id=eid, block=block)], actor="t").first_seq
        self.entries.append((eid, seq, "message", ""))
        self._res_items(key).append(eid)

    def _res_remove(self, key: int, how: str, count: int) -> None:
        items = self._res_items(key)
        gone = tuple(items[:count])
        del items[:count]
        event: ResourceEvicted | ResourceTrimmed | ResourceReplaced
        if how == "evicted":
            event = ResourceEvicted(resource_id="chat", key=f"k{key}", removed_entry_ids=gone,
                                    reason="priority", tokens_before=10, tokens_after=5)
        elif how == "trimmed":
            event = ResourceTrimmed(resource_id="chat", key=f"k{key}", removed_entry_ids=gone,
                                    tokens_before=10, tokens_after=5)
        else:
            event = ResourceReplaced(resource_id="chat", key=f"k{key}", removed_entry_ids=gone)
        self.log.append(f"resource:k{key}", [event], actor="t")

    def _res_flush(self, key: int) -> None:
        items = self._res_items(key)
        if len(items) < 2:
            return
        self.n += 1
        sid = f"e{self.n}"
        folded = tuple(items[:2])
        summary = EntryRecorded(entry_id=sid, kind="summary", content="summary of cache", user_id="alice",
                                occurred_at=1_700_000_000_000_000 + self.n * 3_600_000_000,
                                derived_from=folded)
        seq = self.log.append(f"resource:k{key}", [summary, ResourceFlushed(
            resource_id="chat", key=f"k{key}", block="chat", removed_entry_ids=folded,
            summary_entry_id=sid, tokens_before=20, tokens_after=8)], actor="t").first_seq
        self.entries.append((sid, seq, "summary", ""))
        items[:2] = [sid]

    def _res_declare(self, rid: str, limit: int) -> None:
        spec = ResourceSpec(id=rid, key="{user_id}", token_limit=limit,
                            blocks=(ResourceBlock("sys", 0, 0.1), ResourceBlock("chat", 2, 0.7)))
        self.log.append("resources", [ResourceDeclared(spec)], actor="t")

    # -- formation --

    def _reinforce(self, i: int, similarity: float) -> None:
        if (target := self._live(i)) is None:
            return
        self.n += 1
        event = EntryReinforced(entry_id=target[0], at=1_700_000_000_000_000 + self.n * 3_600_000_000,
                                by_entry_id=f"les{self.n}", similarity=similarity,
                                session_id=target[3] or None)
        self.log.append(f"session:{target[3]}" if target[3] else "user:alice", [event], actor="t")

    def _extracted(self, session: int) -> None:
        sid = f"s{session}"
        ids = tuple(e[0] for e in self.entries if e[3] == sid and e[2] in ("decision", "lesson"))[-2:]
        self.log.append(f"session:{sid}", [SessionExtracted(
            session_id=sid, upto_seq=self.log.head().seq, messages=1, entry_ids=ids,
            trigger="maintain")], actor="t")
    # -- upkeep --

    def _checkpoint(self, session: int, agent: str | None, chat: str | None) -> None:
        self.n += 1
        self.log.append(f"session:s{session}", [CheckpointMarked(
            checkpoint_id=f"ck{self.n}", session_id=f"s{session}", at=1_700_000_000_000_000 + self.n,
            user_id="alice", agent_id=agent, model_id="m1", chat_id=chat)], actor="t")

    def _ephemeral(self, with_user: bool) -> None:
        self.n += 1
        self.log.append(f"session:x{self.n}", [SessionStarted(
            session_id=f"x{self.n}", user_id="bob" if with_user else None, ephemeral=True)], actor="t")

    def _restore_why(self, session: int) -> None:
        self.log.append(f"session:s{session}", [SessionRestored(session_id=f"s{session}",
                                                                reason="auto-restore: a read")], actor="t")


def _details(kind: str, n: int) -> TaskDetails | MessageDetails | None:
    if kind == "task":
        return TaskDetails()
    return MessageDetails(tool_call_id=f"call{n}") if kind == "message" and n % 2 else None
