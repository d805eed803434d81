"""Deterministic synthetic agent memory, for benchmarks and soak runs.

Text is drawn from a Zipf-distributed vocabulary of common English words mixed
with technical terms, so that term frequencies look like real notes (a few
very common words, a long tail). Entries come in seed 000's four kinds
(message, decision, finding, preference) plus lessons and tasks, spread over
several agents, users and sessions. The same seed always gives the same corpus.

    python tools/bench/corpus.py --entries 1000 --dir /tmp/store    # writes a log
    python tools/bench/corpus.py --entries 5 --print                 # shows entries

Only the public API of ``eventstore`` is used.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import random
import sys
from collections.abc import Iterator
from pathlib import Path

from eventstore import (
    AppendRequest,
    DecisionDetails,
    Details,
    EntryRecorded,
    Event,
    EventLog,
    FindingDetails,
    Level,
    MessageDetails,
    PreferenceDetails,
    Role,
    SessionStarted,
    TaskDetails,
)

COMMON = (  # noqa: SIM905 - a word list reads best as text
    "the of and to in is that for it as with was on be by this are at from have not or we an "
    "they which one you were all there can more when if will so what about up out then them "
    "these some would into has two could time only other new should also after first well any "
    "because most over where how way even back still need make like look use used using work "
    "change found next added keep check again before without issue"
).split()
TECHNICAL = (  # noqa: SIM905 - a word list reads best as text
    "postgres postgresql mysql mongodb redis cache latency throughput schema migration index "
    "query planner vacuum replica replication failover kubernetes pod deployment rollout "
    "canary kafka queue consumer producer partition offset retry backoff timeout deadline "
    "circuit breaker oauth token jwt session cookie tls certificate rotation secret vault "
    "encryption lmdb tantivy bm25 embedding vector shard compaction snapshot checkpoint wal "
    "fsync grpc http rest graphql websocket endpoint payload serializer msgpack json protobuf "
    "python rust golang typescript react webpack vite pytest hypothesis mypy ruff linting "
    "latency p99 p50 slo sla alert pager oncall incident postmortem rollback hotfix release "
    "api gateway ratelimit quota billing invoice payment ledger reconciliation idempotency "
    "terraform ansible helm docker container image registry ci pipeline artifact build"
).split()
AGENTS = ("architect", "analyst", "developer", "reviewer", "planner", "ops")
KINDS = ("message", "message", "message", "decision", "finding", "preference", "lesson", "task")
ROLES: tuple[Role, ...] = ("user", "assistant", "assistant", "tool")
LEVELS: tuple[Level, ...] = ("low", "medium", "high", "critical")
START_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z


class Vocabulary:
    """Words with Zipf weights (exponent ``s``), sampled by inverse CDF."""

    def __init__(self, rng: random.Random, s: float = 1.07) -> None:
        words = list(dict.fromkeys(COMMON + TECHNICAL))
        rng.shuffle(words)
        weights = [1.0 / (rank + 1) ** s for rank in range(len(words))]
        self.words = words
        self.cumulative = list(itertools.accumulate(weights))
        self.total = self.cumulative[-1]

    def sample(self, rng: random.Random, count: int) -> list[str]:
        """``count`` words drawn independently."""
        cum, total, words = self.cumulative, self.total, self.words
        return [words[bisect.bisect_left(cum, rng.random() * total)] for _ in range(count)]


class Corpus:
    """A deterministic stream of sessions and entries."""

    def __init__(self, seed: int = 7, sessions: int = 200, users: int = 20) -> None:
        self.rng = random.Random(seed)
        self.vocab = Vocabulary(self.rng)
        self.sessions = [f"s{i:05d}" for i in range(sessions)]
        self.users = [f"user{i:03d}" for i in range(users)]

    def text(self, low: int = 12, high: int = 60) -> str:
        """A sentence-like string of Zipf words."""
        words = self.vocab.sample(self.rng, self.rng.randint(low, high))
        return " ".join(words).capitalize() + "."

    def session_events(self) -> Iterator[tuple[str, Event]]:
        """One session.started per session: (stream, event)."""
        for i, sid in enumerate(self.sessions):
            agents = tuple(self.rng.sample(AGENTS, 3))
            yield f"session:{sid}", SessionStarted(
                session_id=sid, user_id=self.users[i % len(self.users)], agent_ids=agents,
                tags=tuple(self.rng.sample(TECHNICAL, 2)), metadata={"project": f"p{i % 7}"})

    def entries(self, count: int) -> Iterator[tuple[str, EntryRecorded]]:
        """``count`` entries: (stream, event), in occurred_at order."""
        rng = self.rng
        for n in range(count):
            sid = self.sessions[rng.randrange(len(self.sessions))]
            kind = KINDS[rng.randrange(len(KINDS))]
            yield f"session:{sid}", EntryRecorded(
                entry_id=f"en{n:08d}", kind=kind, content=self.text(), session_id=sid,  # type: ignore[arg-type]
                occurred_at=START_US + n * 1_000_000, agent_id=AGENTS[rng.randrange(len(AGENTS))],
                user_id=self.users[int(sid[1:]) % len(self.users)],
                role=ROLES[rng.randrange(len(ROLES))] if kind == "message" else None,
                tags=tuple(rng.sample(TECHNICAL, rng.randint(0, 3))), details=self._details(kind),
            )

    def _details(self, kind: str) -> Details | None:
        rng = self.rng
        if kind == "message":
            return MessageDetails(topic=rng.choice(TECHNICAL))
        if kind == "decision":
            return DecisionDetails(rationale=self.text(8, 25), impact=rng.choice(LEVELS),
                                   made_by=rng.choice(AGENTS), alternatives=(self.text(3, 8),))
        if kind == "finding":
            return FindingDetails(severity=rng.choice(LEVELS), category=rng.choice(TECHNICAL),
                                  evidence=self.text(6, 20), recommendation=self.text(6, 20))
        if kind == "preference":
            return PreferenceDetails(key=f"pref_{rng.choice(TECHNICAL)}", value=self.text(2, 6),
                                     confidence=round(rng.random(), 2))
        if kind == "task":
            return TaskDetails(done=rng.random() < 0.3)
        return None

    def queries(self, count: int) -> list[str]:
        """Mixed queries: one to three words, technical and common."""
        out = []
        for _ in range(count):
            words = self.vocab.sample(self.rng, self.rng.randint(1, 3))
            if self.rng.random() < 0.5:
                words[0] = self.rng.choice(TECHNICAL)
            out.append(" ".join(words))
        return out


def write_corpus(log: EventLog, entries: int, seed: int = 7, batch: int = 10_000) -> int:
    """Append sessions and ``entries`` entries in batches; return the head seq."""
    corpus = Corpus(seed)
    log.append_many([AppendRequest(stream, [event], "corpus") for stream, event in corpus.session_events()])
    pending: list[AppendRequest] = []
    for stream, event in corpus.entries(entries):
        pending.append(AppendRequest(stream, [event], "corpus"))
        if len(pending) >= batch:
            log.append_many(pending)
            pending = []
    if pending:
        log.append_many(pending)
    return log.head().seq


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dir", type=Path, help="write a log into DIR/log")
    parser.add_argument("--print", action="store_true", help="print entries instead")
    args = parser.parse_args()
    if args.print or args.dir is None:
        for _, event in Corpus(args.seed).entries(args.entries):
            print(f"{event.entry_id} {event.kind:<10} {event.content}")
        return
    with EventLog.open(args.dir / "log") as log:
        head = write_corpus(log, args.entries, args.seed)
    print(f"wrote {head} events to {args.dir / 'log'}", file=sys.stderr)


if __name__ == "__main__":
    main()
