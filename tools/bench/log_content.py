"""Deterministic entry content for tools/bench/bench_log.py (no global RNG)."""

from __future__ import annotations

from typing import cast

from eventstore import ENTRY_KINDS, EntryKind, EntryRecorded, MessageDetails

STREAMS = 8

WORDS = (
    "agent", "memory", "session", "user", "decision", "finding", "lesson", "preference", "task",
    "handoff", "summary", "project", "deploy", "rollback", "latency", "cache", "index", "query",
    "shard", "replica", "config", "review", "test", "build", "release", "budget", "migration",
    "schema", "version", "backup", "restore", "audit", "privacy", "erase", "tombstone", "chain",
    "commit", "verify", "metric", "alert", "incident", "owner", "deadline", "priority", "risk",
    "customer", "feedback", "design", "tradeoff", "prototype", "benchmark", "profile",
    "throughput", "storage", "network", "timeout", "retry", "queue", "worker", "batch",
    "stream", "event", "projection", "snapshot", "replay",
)


# -- deterministic content ---------------------------------------------------------

def _sentences(count: int) -> list[str]:
    """A fixed pool of sentences built from WORDS (a small LCG, no global RNG)."""
    state = 12345
    pool = []
    for _ in range(count):
        words = []
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        for _ in range(6 + state % 9):
            state = (state * 1103515245 + 12345) & 0x7FFFFFFF
            words.append(WORDS[state % len(WORDS)])
        pool.append(" ".join(words).capitalize() + ".")
    return pool


SENTENCES = _sentences(509)


def content_for(i: int, size: int) -> str:
    """Deterministic text of ``size`` to ``2 * size`` characters for entry ``i``."""
    target = size + (i * 37) % (size + 1)
    parts: list[str] = []
    length, k = 0, 0
    while length < target:
        parts.append(SENTENCES[(i * 31 + k * 97) % len(SENTENCES)])
        length += len(parts[-1]) + 1
        k += 1
    return " ".join(parts)[: target - 14].rstrip() + f" (#{i:010d})"


def make_event(i: int, size: int = 200, base_us: int = 1_700_000_000_000_000) -> EntryRecorded:
    """One realistic ``EntryRecorded`` event; content is ~200-400 bytes by default."""
    kind = cast("EntryKind", ENTRY_KINDS[i % len(ENTRY_KINDS)])
    is_message = kind == "message"
    return EntryRecorded(
        entry_id=f"e-{i:09d}", kind=kind, content=content_for(i, size),
        occurred_at=base_us + i * 1000, session_id=f"s{i % STREAMS}", user_id="u-1",
        agent_id=f"agent-{i % 3}", role="assistant" if is_message else None,
        tags=(WORDS[i % len(WORDS)], WORDS[(i * 7 + 1) % len(WORDS)]),
        importance=round((i % 10) / 10, 1),
        details=MessageDetails(topic=WORDS[i % 17]) if is_message else None,
    )
