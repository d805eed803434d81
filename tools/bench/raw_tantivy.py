"""The raw anchors of tools/bench/bench_projections.py: Tantivy and SQLite FTS5 on
the documents memlog's search index holds, built off the clock."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tantivy
from benchkit import collector_off

from eventstore import EntryRecorded, EventLog
from projections import build_schema, entry_document, searchable_text

__all__ = ["SCHEMA", "RawCorpus", "build_raw_corpus", "fts5_build", "or_words", "raw_tantivy_build"]

SCHEMA = build_schema()


@dataclass(slots=True)
class RawCorpus:
    """Documents and texts of every entry, built from the log off the clock."""

    docs: list[Any] = field(default_factory=list)
    rows: list[tuple[int, str]] = field(default_factory=list)  # (seq, searchable text)
    build_s: float = 0.0
    make_s: float = 0.0  # of build_s: memlog's own making of the documents (``entry_document``)
    embed_s: float = 0.0  # the default embedder over every text (set by the caller: tools/bench/floors.py)


def build_raw_corpus(elog: EventLog) -> RawCorpus:
    """Read the log once and build the raw Tantivy documents and FTS5 rows."""
    out = RawCorpus()
    clock = time.perf_counter
    started = clock()
    # With the collector off: the documents held here (a million at 1M) would make
    # every collection an ``entry_document`` call sets off walk them, charged to ``make_s``.
    with collector_off():
        for rec in elog.read():
            event = rec.event
            if isinstance(event, EntryRecorded):
                text = searchable_text(event)
                # Raw Tantivy gets ready-made documents: building them is off the clock.
                made = clock()
                doc = entry_document(event, rec.seq, rec.seq)
                out.make_s += clock() - made
                out.docs.append(tantivy.Document.from_dict(json.loads(doc), SCHEMA))
                out.rows.append((rec.seq, text))
    out.build_s = clock() - started
    return out


def raw_tantivy_build(path: Path, schema: Any, docs: Sequence[Any]) -> tuple[float, float]:
    """Index ``docs`` with one writer (default heap and threads), commit; the
    seconds, and the CPU seconds of this process meanwhile (Tantivy's indexing
    threads included)."""
    path.mkdir(mode=0o700)
    cpu = time.process_time()
    started = time.perf_counter()
    index = tantivy.Index(schema, path=str(path))
    writer = index.writer()
    for doc in docs:
        writer.add_document(doc)
    writer.commit()
    writer.wait_merging_threads()
    return time.perf_counter() - started, time.process_time() - cpu


def fts5_build(path: Path, rows: Sequence[tuple[int, str]]) -> tuple[sqlite3.Connection, float]:
    """An FTS5 table of the same texts, one transaction; (connection, seconds)."""
    conn = sqlite3.connect(str(path))
    started = time.perf_counter()
    conn.execute("CREATE VIRTUAL TABLE docs USING fts5(content)")
    with conn:
        conn.executemany("INSERT INTO docs(rowid, content) VALUES (?, ?)", rows)
    return conn, time.perf_counter() - started



def or_words(query: str) -> list[str]:
    """The words of a benchmark query, OR-joined by the raw anchors."""
    return query.split()
