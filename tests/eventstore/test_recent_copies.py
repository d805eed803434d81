"""A process's own copies of the recent payloads it committed (``Segments.own_recent``):
a seal and a read take them instead of revealing the concealed values; without
them (another process appended) the values are revealed; an erasure drops its
copy; at most ``2 * SEAL_AT`` are held. Also: a forked child draws its own
tail for generated event ids, its own prefix for nonces and its own salts;
salts are never handed out twice."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

import eventstore.lmdb.segments as segments_module
from eventstore import EntriesDeleted, EntryRecorded, EventLog
from eventstore.chain import SALT_SIZE, new_salts
from eventstore.lmdb import recent
from eventstore.lmdb.backend import _keep_copies
from eventstore.lmdb.layout import seq_key
from eventstore.log import _event_ids


def _event(k: int) -> EntryRecorded:
    return EntryRecorded(entry_id=f"e{k}", kind="message", occurred_at=k, content=f"own copy {k}")


def _count_reveals(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = segments_module.reveal

    def counting(key: bytes, value: object) -> bytes:
        calls.append(1)
        return original(key, value)

    monkeypatch.setattr(segments_module, "reveal", counting)
    return calls


def test_own_appends_are_sealed_and_read_without_revealing(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_reveals(monkeypatch)
    with EventLog.open(tmp_path / "log") as log:
        for k in range(5):
            log.append("s:a", [_event(k)], actor="t")
        assert len(log.backend.shared.segments.own_recent) == 5
        assert log.events_at([1, 3, 5]) == [_event(0), _event(2), _event(4)]
        assert log.backend.seal() == 5
        assert calls == []
        assert log.backend.shared.segments.own_recent == {}
        assert [r.event for r in log.read()] == [_event(k) for k in range(5)]
        assert log.verify().ok


def test_payloads_of_another_process_are_revealed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_reveals(monkeypatch)
    with EventLog.open(tmp_path / "log") as log:
        for k in range(4):
            log.append("s:a", [_event(k)], actor="t")
        log.backend.shared.segments.own_recent.clear()  # as if another process appended them
        assert log.events_at([2]) == [_event(1)]
        assert len(calls) == 1
        assert log.backend.seal() == 4
        assert len(calls) == 5
        assert [r.event for r in log.read()] == [_event(k) for k in range(4)]


def test_an_erasure_drops_its_copy(tmp_path: Path) -> None:
    with EventLog.open(tmp_path / "log") as log:
        log.append("s:a", [_event(0)], actor="t")
        log.append("s:a", [_event(1)], actor="t")
        tombstone = EntriesDeleted(request_id="r", entry_ids=("e0",), erased_seqs=(1,))
        log.erase([1], tombstone, stream="s:a", actor="t")
        own = log.backend.shared.segments.own_recent
        assert seq_key(1) not in own
        assert not any(b"own copy 0" in stored for stored in own.values())
        assert log.events_at([1, 2]) == [None, _event(1)]


def test_copies_left_by_seals_elsewhere_are_bounded() -> None:
    own: dict[bytes, bytes] = {}
    bound = 2 * recent.SEAL_AT
    for seq in range(1, 3 * bound):  # no seal of this process ever takes them
        writer = SimpleNamespace(sealing=False, recent_items=[(seq_key(seq), b"x")], erased=set())
        _keep_copies(own, writer)  # type: ignore[arg-type]
        assert len(own) <= bound
    _keep_copies(own, SimpleNamespace(sealing=True, recent_items=[], erased=set()))  # type: ignore[arg-type]
    assert own == {}


def _draws_in_a_child() -> bytes:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.write(write, _draws())
        finally:
            os._exit(0)
    os.close(write)
    data = os.read(read, 4096)
    os.close(read)
    os.waitpid(pid, 0)
    return data


def _draws() -> bytes:
    eid = _event_ids(None, 1)[0][0]
    nonce = recent.conceal(b"k" * 32, b"s")[: recent.NONCE_SIZE]
    return eid[-12:].encode() + b"|" + nonce[:8].hex().encode() + b"|" + new_salts(1).hex().encode()


def test_a_forked_child_draws_its_own_id_tail_nonce_prefix_and_salts() -> None:
    new_salts(1)  # the parent holds a block of salts drawn ahead
    child = _draws_in_a_child()
    parent = _draws()
    parent_tail, parent_prefix, parent_salt = parent.split(b"|")
    child_tail, child_prefix, child_salt = child.split(b"|")
    assert child_salt != parent_salt  # the child dropped the parent's block
    assert child_prefix != parent_prefix
    # Tails are base + call number: the child's base is fresh, so its next
    # tail is not the parent's next one.
    assert child_tail != parent_tail
    assert int(child_tail, 16) != int(parent_tail, 16) + 1


def test_salts_are_never_handed_out_twice() -> None:
    """Small draws come from a block drawn ahead, large ones straight from the OS."""
    draws = [new_salts(n) for _ in range(300) for n in (1, 3, 8)] + [new_salts(40), new_salts(1000)]
    assert [len(d) for d in draws[:3]] == [SALT_SIZE, 3 * SALT_SIZE, 8 * SALT_SIZE]
    assert len(draws[-1]) == 1000 * SALT_SIZE
    salts = [d[i : i + SALT_SIZE] for d in draws for i in range(0, len(d), SALT_SIZE)]
    assert len(set(salts)) == len(salts)


def test_generated_ids_of_one_process_never_repeat() -> None:
    ids = [eid for _ in range(2000) for eid in _event_ids(None, 3)[0]]
    assert len(set(ids)) == len(ids)
    assert all(len(eid) == 32 for eid in ids)
