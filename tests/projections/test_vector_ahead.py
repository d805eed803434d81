"""The vector worker's rows embedded ahead (``projections.embed.worker``): the
same bytes as embedding at apply time, taken once and only for the same text,
bounded in memory, and the worker's main with them."""

from __future__ import annotations

import io
import os
import pickle
import struct
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import projections.embed.store as store
import projections.embed.worker as worker
from eventstore import EntryRecorded, EventLog
from projections import Projections, searchable_text
from projections.embed import VectorIndex, default_embedder
from projections.embed.ops import vector_ops
from tests.projections.history import History

pytest.importorskip("numpy")

STEPS: list[tuple[Any, ...]] = [
    *[("entry", i % 3, kind, ["postgres", "cache", word, "Zürich café 東京"][: 1 + i % 4])
      for i, (kind, word) in enumerate([("message", "alpha"), ("lesson", "queue"), ("decision", "retry"),
                                        ("finding", "index"), ("task", "deploy")] * 5)],
    ("update", 3, True), ("redact", 7), ("delete", 5), ("remember", "alice", "k1", "cache"),
]


def _history(tmp_path: Path) -> tuple[EventLog, Projections]:
    log = EventLog.open(tmp_path / "log")
    (tmp_path / "src").mkdir()
    proj = Projections(tmp_path / "src", log, shards=1, embedder=None)
    history = History(log, proj)
    for step in STEPS:
        history.run(step)
    proj.catch_up()
    return log, proj


def _entries(log: EventLog) -> list[tuple[int, str]]:
    return [(rec.seq, searchable_text(rec.event)) for rec in log.read()
            if isinstance(rec.event, EntryRecorded)]


def _ahead(log: EventLog) -> worker.Ahead:
    embedder = default_embedder()
    assert embedder is not None
    ahead = worker.Ahead(log, 0, log.head().seq, embedder)
    while not ahead.done:
        ahead.step()
    return ahead


def _all_ops(log: EventLog, proj: Projections) -> list[Any]:
    with proj.read() as views:
        ops = []
        for rec in log.read():
            views.as_of = rec.seq
            ops += vector_ops(rec, views)
        views.as_of = None
    return ops


def test_rows_ahead_are_the_embedding_and_taken_once(tmp_path: Path) -> None:
    log, proj = _history(tmp_path)
    try:
        embedder = default_embedder()
        assert embedder is not None
        ahead = _ahead(log)
        entries = _entries(log)
        assert ahead.held == len(entries) * ahead.size
        first_seq, first_text = entries[0]
        assert ahead.take(first_seq, first_text + " changed") is None  # another text
        assert ahead.take(first_seq, first_text) is None  # passed already
        assert ahead.take(first_seq - 1, first_text) is None  # never embedded ahead
        for seq, text in entries[1:]:
            row = ahead.take(seq, text)
            assert row == embedder.embed([text]).astype("<f2")[0].tobytes()
            assert ahead.take(seq, text) is None  # once
        assert ahead.taken == len(entries) - 1
        assert ahead.take(entries[-1][0] + 1, "") is None and ahead.held == 0  # all let go
    finally:
        proj.close()
        log.close()


def test_apply_with_rows_ahead_equals_apply_without(tmp_path: Path) -> None:
    log, proj = _history(tmp_path)
    try:
        embedder = default_embedder()
        assert embedder is not None
        ops, head = _all_ops(log, proj), log.head().seq
        plain, helped = VectorIndex(tmp_path / "plain", embedder), VectorIndex(tmp_path / "helped", embedder)
        ahead = _ahead(log)
        try:
            for start in range(0, len(ops), 7):  # several chunks, as a replay sends them
                upto = head if start + 7 >= len(ops) else ops[start + 6][0]
                plain.apply(ops[start : start + 7], upto)
                helped.apply(ops[start : start + 7], upto, ahead)
            assert ahead.taken > 0
            assert helped.dump() == plain.dump()
            assert helped.checkpoint() == plain.checkpoint() == head
        finally:
            plain.close()
            helped.close()
    finally:
        proj.close()
        log.close()


def test_rows_ahead_stop_at_their_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log, proj = _history(tmp_path)
    try:
        embedder = default_embedder()
        assert embedder is not None
        monkeypatch.setattr(worker, "AHEAD_STEP", 4)
        monkeypatch.setattr(worker, "AHEAD_MAX", 6 * (16 + 2 * embedder.dim))
        ahead = worker.Ahead(log, 0, log.head().seq, embedder)
        entries = _entries(log)
        ahead.step()
        assert not ahead.full and ahead.held == 4 * ahead.size
        ahead.step()
        assert ahead.full and not ahead.done  # the worker embeds no more ahead for now
        for seq, text in entries[:5]:
            assert ahead.take(seq, text) is not None
        assert ahead.take(entries[5][0], entries[5][1]) is not None  # the first block let go
        assert not ahead.full and ahead.held == 4 * ahead.size  # the second block, two rows taken
        while not ahead.done:
            ahead.step()
        assert ahead.held == (len(entries) - 4) * ahead.size
    finally:
        proj.close()
        log.close()


def test_frames_cross_a_pipe(tmp_path: Path) -> None:
    read_fd, write_fd = os.pipe()
    try:
        assert not worker.waiting(read_fd)
        for body in (b"", b"x" * 70_000):
            os.write(write_fd, struct.pack(">Q", len(body)))
            if body:
                os.write(write_fd, body[:100])
                with open(os.dup(write_fd), "wb") as rest:  # the rest, as the pipe drains
                    thread = threading.Thread(target=rest.write, args=(body[100:],))
                    thread.start()
                    assert worker.read_frame(read_fd) == body
                    thread.join()
            else:
                assert worker.waiting(read_fd)
                assert worker.read_frame(read_fd) == body
        os.write(write_fd, struct.pack(">Q", 10) + b"abc")
        os.close(write_fd)
        write_fd = -1
        with pytest.raises(EOFError):
            worker.read_frame(read_fd)
        assert worker.read_frame(read_fd) is None
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


def test_rows_ahead_skip_what_was_asked_for_already(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the search pass asked past the reading, nothing at or below what it
    asked for is embedded; far past, the reading starts again from there."""
    log, proj = _history(tmp_path)
    try:
        embedder = default_embedder()
        assert embedder is not None
        entries = _entries(log)
        monkeypatch.setattr(worker, "AHEAD_STEP", 3)
        monkeypatch.setattr(worker, "AHEAD_RECORDS", 4)
        ahead = worker.Ahead(log, 0, log.head().seq, embedder)
        assert ahead.take(entries[2][0], entries[2][1]) is None  # asked before it was embedded ahead
        while not ahead._blocks:  # reads on from the start: the records it passed are not embedded
            ahead.step()
        assert all(seq > entries[2][0] for seq in ahead._blocks[0][0])
        assert ahead._blocks[0][0][0] == entries[3][0]
        assert ahead.take(entries[15][0], entries[15][1]) is None
        ahead.step()  # far past: reads from entries[15] on
        assert ahead._blocks and ahead._blocks[-1][0][0] == entries[16][0]
        row = ahead.take(entries[16][0], entries[16][1])
        assert row == embedder.embed([entries[16][1]]).astype("<f2")[0].tobytes()
    finally:
        proj.close()
        log.close()


def _send(ops: list[Any], head: int, size: int) -> int:
    """A pipe holding ``ops`` in frames of ``size`` ops, closed; its read end."""
    read_fd, write_fd = os.pipe()
    with open(write_fd, "wb") as pipe:
        for start in range(0, len(ops), size):
            upto = head if start + size >= len(ops) else ops[start + size - 1][0]
            data = pickle.dumps((ops[start : start + size], upto))
            pipe.write(struct.pack(">Q", len(data)) + data)
    return read_fd


@pytest.mark.parametrize("fails", [False, True])
def test_worker_main_embeds_ahead_between_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 fails: bool) -> None:
    """The worker's main, in this process, with a chunk seen waiting every
    third look: the chunks are applied from the rows embedded ahead between
    them, and no row is embedded for what was asked for already; when
    embedding ahead fails (``fails``: at its second step), it applies them all
    the same."""
    log, proj = _history(tmp_path)
    try:
        embedder = default_embedder()
        assert embedder is not None
        ops, head = _all_ops(log, proj), log.head().seq
        expected = VectorIndex(tmp_path / "expected", embedder)
        expected.apply(ops, head)
        looks = iter([False, False, True] * 1000)
        monkeypatch.setattr(store, "waiting", lambda fd: next(looks))
        monkeypatch.setattr(store.signal, "signal", lambda *a: None)  # not pytest's SIGTERM
        monkeypatch.setattr(worker, "AHEAD_STEP", 2)
        made: list[worker.Ahead | None] = []
        steps: list[tuple[int, list[int]]] = []
        step = worker.Ahead.step

        def counted(self: worker.Ahead) -> None:
            if fails and steps:
                raise OSError("a damaged record")
            before = len(self._blocks)
            step(self)
            steps.append((self.passed, [seq for block in list(self._blocks)[before:] for seq in block[0]]))

        monkeypatch.setattr(worker.Ahead, "step", counted)
        ahead_of = store._ahead

        def kept(embedder: Any) -> worker.Ahead | None:
            made.append(ahead_of(embedder))
            return made[-1]

        monkeypatch.setattr(store, "_ahead", kept)
        monkeypatch.setattr(sys, "argv", ["-c", str(tmp_path / "vectors"), str(tmp_path / "log"), "0",
                                          str(head)])
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.FileIO(_send(ops, head, 5), "rb")))
        log.close()  # the worker opens the log itself
        store.worker_main()
        assert len(steps) == 1 if fails else len(steps) > 2
        assert all(seq > passed for passed, seqs in steps for seq in seqs)
        assert made[0] is not None and made[0].done  # and its log closed
        assert made[0].taken == 0 if fails else made[0].taken > 0
        done = VectorIndex(tmp_path / "vectors", embedder)
        try:
            assert done.dump() == expected.dump()
            assert done.checkpoint() == head
        finally:
            done.close()
            expected.close()
    finally:
        proj.close()
        log.close()
