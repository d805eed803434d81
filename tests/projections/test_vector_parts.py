"""The vector rows in seq-range partitions: a removal marks its partition dirty,
a purge rewrites only the dirty ones, and every write order survives a kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

np = pytest.importorskip("numpy")

from eventstore import EventLog  # noqa: E402
from projections import Projections  # noqa: E402
from projections.embed import VectorIndex, VectorOp, parts  # noqa: E402

from .test_embed import Hashing, _history  # noqa: E402

OPEN = (1 << 63) - 1
ROOT = Path(__file__).resolve().parents[2]


def _adds(first: int, last: int) -> list[VectorOp]:
    return [(s, "add", s, s, OPEN, f"note {s} about word{s % 7} and topic{s % 3}")
            for s in range(first, last + 1)]


def _holds(path: Path, needle: bytes) -> list[str]:
    """The files under ``path`` holding ``needle`` (lock files hold no content)."""
    return [str(p.relative_to(path)) for p in sorted(path.rglob("*"))
            if p.is_file() and p.name != "lock.mdb" and needle in p.read_bytes()]


@pytest.fixture
def span(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(parts, "PART_SPAN", 4)
    return 4


def test_rows_go_to_their_partition_and_a_purge_rewrites_only_dirty_ones(tmp_path: Path, span: int) -> None:
    index = VectorIndex(tmp_path / "v", Hashing())
    try:
        index.apply(_adds(1, 12), 12)
        assert index.parts.existing() == [0, 1, 2, 3] and len(index) == 12
        assert index.parts.dirty() == []
        gone = index.dump()[5][2]
        index.apply([(13, "remove", 5, 0, 0, ""), (14, "remove", 99, 0, 0, "")], 14)
        assert index.parts.dirty() == [1], "a removal marks its own partition; an absent row none"
        assert _holds(tmp_path / "v", gone) == ["part-000001/data.mdb"], "bytes linger until the purge"
        files = index.purge(30.0)
        assert files == [str((tmp_path / "v" / "part-000001" / "data.mdb").resolve())]
        assert index.parts.dirty() == [] and index.purge(30.0) == []
        assert not _holds(tmp_path / "v", gone)
        assert sorted(index.dump()) == [r for r in range(1, 13) if r != 5]
        hits = index.search(index.embed_query("note 6 about word6 and topic0"), 3, None)
        assert hits[0][0] == 6 and 5 not in {r for r, _ in hits}
    finally:
        index.close()


def test_clear_marks_every_partition_and_a_cut_short_clear_finishes_on_open(tmp_path: Path,
                                                                            span: int) -> None:
    index = VectorIndex(tmp_path / "v", Hashing())
    index.apply(_adds(1, 9), 9)
    index.clear()
    assert len(index) == 0 and index.checkpoint() == 0 and index.parts.dirty() == [0, 1, 2]
    index.purge(30.0)
    index.apply(_adds(1, 9), 9)
    # A clear that died after its first transaction: checkpoint 0 and the flag, the rows still there.
    shared = index._env()

    def first_half(txn: Any) -> None:
        txn.put(b"resetting", b"1", db=shared.dbs[b"meta"])
        txn.delete(b"checkpoint", db=shared.dbs[b"meta"])

    shared.write(first_half)
    assert index.search(index.embed_query("note 3"), 5, None) == [], "no row is read before the clear ends"
    index.close()
    again = VectorIndex(tmp_path / "v", Hashing())
    try:
        assert len(again) == 0 and again.parts.dirty() == [0, 1, 2]
        again.apply(_adds(1, 9), 9)
        assert len(again) == 9
    finally:
        again.close()


def test_partitions_ahead_of_the_checkpoint_apply_again_to_the_same_rows(tmp_path: Path, span: int) -> None:
    """A crash after the partitions and before the main transaction: the same
    operations applied again (in other chunks) end in the rows of a clean run."""
    ops = [*_adds(1, 10), (11, "remove", 3, 0, 0, ""), (12, "add", 3, 3, 12, "note 3 again"),
           (13, "remove", 9, 0, 0, "")]
    clean = VectorIndex(tmp_path / "clean", Hashing())
    crashed = VectorIndex(tmp_path / "crashed", Hashing())
    try:
        clean.apply(ops[:6], 6)
        clean.apply(ops[6:], 13)
        crashed.apply(ops[:6], 6)
        vectors = (row.tobytes() for row in
                   crashed.embedder.embed([op[5] for op in ops if op[1] == "add"]).astype("<f2"))
        from projections.embed.store import _row

        crashed.parts.write([_row(op, vectors) for op in ops])  # every row, the checkpoint still 6
        assert crashed.checkpoint() == 6
        crashed.apply(ops[6:9], 9)
        crashed.apply(ops[9:], 13)
        assert crashed.dump() == clean.dump() and crashed.checkpoint() == 13
    finally:
        clean.close()
        crashed.close()


_CHILD = textwrap.dedent("""
    import sys, zlib
    from pathlib import Path
    import numpy as np
    from projections.embed import VectorIndex, parts

    class Hashing:
        name, dim = "hashing-64", 64
        def embed(self, texts):
            out = np.zeros((len(texts), 64), dtype=np.float32)
            for i, t in enumerate(texts):
                for w in t.lower().split():
                    out[i, zlib.crc32(w.encode()) % 64] += 1.0
            return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    parts.PART_SPAN = 4
    OPEN = (1 << 63) - 1
    index = VectorIndex(Path(sys.argv[1]), Hashing())
    index.apply([(s, "add", s, s, OPEN, f"note {s} about word{s % 7} and topic{s % 3}")
                 for s in range(1, 11)], 10)
    index.apply([(11, "remove", 6, 0, 0, ""), (12, "add", 12, 12, OPEN, "note 12")], 12)
    if sys.argv[2] == "purge":
        index.purge(30.0)
    print("survived")
""")


def _killed_child(path: Path, mode: str, at: int) -> None:
    env = {**os.environ, "MEMLOG_CRASH_AT": str(at), "MEMLOG_CRASH_KILL": "1",
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(path), mode], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr


def test_kill_9_between_the_partitions_and_the_checkpoint(tmp_path: Path, span: int) -> None:
    """Killed (SIGKILL) after the second chunk's partition transactions: the
    checkpoint is the first chunk's, the partitions are ahead, and the catch-up's
    second try ends in the rows of a clean run."""
    _killed_child(tmp_path / "v", "apply", at=2)
    index = VectorIndex(tmp_path / "v", Hashing())
    clean = VectorIndex(tmp_path / "clean", Hashing())
    try:
        assert index.checkpoint() == 10
        assert 6 not in index.dump() and 12 in index.dump(), "the partitions ran ahead"
        assert index.parts.dirty() == [1]
        second = [(11, "remove", 6, 0, 0, ""), (12, "add", 12, 12, OPEN, "note 12")]
        index.apply(second, 12)
        clean.apply(_adds(1, 10), 10)
        clean.apply(second, 12)  # type: ignore[arg-type]
        assert index.dump() == clean.dump() and index.checkpoint() == 12
    finally:
        index.close()
        clean.close()


def test_kill_9_after_a_partition_is_unmarked_leaves_it_to_the_next_purge(tmp_path: Path, span: int) -> None:
    """Killed after the purge removed a partition's mark and before its copy:
    the main environment's ``purging`` record makes the next purge rewrite it."""
    _killed_child(tmp_path / "v", "purge", at=3)  # two applies, then the first step of the purge
    index = VectorIndex(tmp_path / "v", Hashing())
    try:
        assert index.parts.dirty() == [], "the mark was removed"
        stale = Hashing().embed(["note 6 about word6 and topic0"]).astype("<f2").tobytes()
        assert _holds(tmp_path / "v", stale) == ["part-000001/data.mdb"]
        files = index.purge(30.0)
        assert [Path(f).parent.name for f in files] == ["part-000001"]
        assert not _holds(tmp_path / "v", stale)
        assert index.purge(30.0) == []
    finally:
        index.close()


def _built(tmp_path: Path, log: EventLog) -> tuple[dict[int, tuple[int, int, bytes]], Path]:
    """Write the history, catch the projections up; their vectors and directory."""
    _history(log)
    proj = Projections(tmp_path, log, embedder=Hashing())
    try:
        proj.catch_up(search=True)
        assert proj.vectors is not None
        return proj.vectors.dump(), proj.root
    finally:
        proj.close()


def test_a_directory_of_the_single_file_layout_is_rebuilt(tmp_path: Path) -> None:
    """Layout 7 kept every vector in ``vectors/data.mdb``: such a directory is
    rebuilt by replay on open, into partitions holding the same vectors."""
    with EventLog.open(tmp_path / "log") as log:
        before, old_root = _built(tmp_path, log)
        (old_root / "layout").write_text("7 shards=1\n")
        again = Projections(tmp_path, log, embedder=Hashing())
        try:
            again.catch_up(search=True)
            assert again.root != old_root and not old_root.exists()
            assert again.vectors is not None and again.vectors.dump() == before
            assert [p.name for p in (again.root / "vectors").glob("part-*")] == ["part-000000"]
        finally:
            again.close()


def test_a_truncated_partition_fails_the_open_and_is_rebuilt(tmp_path: Path) -> None:
    """A partition's file cut short is found when the vectors open (every
    partition is opened, its meta pages checked): the projections are rebuilt."""
    with EventLog.open(tmp_path / "log") as log:
        before, old_root = _built(tmp_path, log)
        data = old_root / "vectors" / "part-000000" / "data.mdb"
        with open(data, "r+b") as fh:
            fh.truncate(data.stat().st_size // 2)
        again = Projections(tmp_path, log, embedder=Hashing())
        try:
            again.catch_up(search=True)
            assert again.root != old_root
            assert again.vectors is not None and again.vectors.dump() == before
        finally:
            again.close()


def test_a_partition_rewritten_by_another_process_is_used_again(tmp_path: Path, span: int) -> None:
    """Another process's purge moves a partition's generation: this process's
    next read and write reopen it and use the new handles (not the old ones)."""
    index = VectorIndex(tmp_path / "v", Hashing())
    try:
        index.apply(_adds(1, 8), 8)
        generation = tmp_path / "v" / "part-000001" / "generation"
        generation.write_text(str(int(generation.read_text().strip() or 0) + 1))  # as a purge elsewhere
        assert sorted(index.dump()) == list(range(1, 9))
        index.apply([(9, "remove", 5, 0, 0, ""), *_adds(10, 10)], 10)
        assert sorted(index.dump()) == [1, 2, 3, 4, 6, 7, 8, 10] and index.parts.dirty() == [1]
    finally:
        index.close()


def test_a_purge_of_everything_rewrites_every_partition(tmp_path: Path, span: int) -> None:
    """The purge's second pass (its scan found content) rewrites every partition, dirty or not."""
    index = VectorIndex(tmp_path / "v", Hashing())
    try:
        index.apply(_adds(1, 8), 8)
        assert index.parts.dirty() == [] and index.purge(30.0) == []
        rewritten = index.purge(30.0, everything=True)
        assert sorted(Path(f).parent.name for f in rewritten) == ["part-000000", "part-000001", "part-000002"]
    finally:
        index.close()
