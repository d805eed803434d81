"""What the NATS backend adds to the contract: its location, the refusal of an
old server, concurrent writers on one stream, retries by event id from another
client, erasure on the server, and a MemoryLog whose log is shared.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from eventstore import ConcurrencyError, EntriesDeleted, EventLog, InvalidInputError
from eventstore.nats import NatsUnavailableError, NatsUnsupportedError, parse_location
from eventstore.nats.client import check_version

from .contract import entry
from .nats_fixtures import Cluster, nats_node, stream_url  # noqa: F401


def test_location_parsing() -> None:
    """Hosts, stream name (default memlog), replicas and timeout; bad parts are named."""
    loc = parse_location("nats://127.0.0.1:4222,127.0.0.1:4223/team_a?replicas=3&timeout=2.5")
    assert loc.servers == ("nats://127.0.0.1:4222", "nats://127.0.0.1:4223")
    assert (loc.stream, loc.replicas, loc.timeout) == ("team_a", 3, 2.5)
    assert parse_location("nats://localhost:4222").stream == "memlog"
    for bad in ("nats:///x", "nats://h:1/a.b", "nats://h:1/x?replicas=9", "nats://h:1/x?color=red"):
        with pytest.raises(InvalidInputError):
            parse_location(bad)


def test_old_servers_are_refused() -> None:
    """A server before 2.12 is refused with the version it has and the one needed."""
    for old in ("2.9.25", "2.10.0", "2.11.9"):
        with pytest.raises(NatsUnsupportedError, match=old):
            check_version(old)
    check_version("2.12.0")
    check_version("2.15.1")


def test_no_server_is_a_clear_error() -> None:
    """Nothing listening: NatsUnavailableError (E_STORAGE_IO), not a hang."""
    with pytest.raises(NatsUnavailableError) as info:
        EventLog.open("nats://127.0.0.1:1/x?timeout=1")
    assert info.value.code == "E_STORAGE_IO"


def test_concurrent_writers_keep_one_chain(nats_node: Cluster) -> None:  # noqa: F811
    """Four clients append at once: gapless seqs, one chain, exactly one winner
    per expected version."""
    url = stream_url(nats_node)
    logs = [EventLog.open(url) for _ in range(4)]
    wins: list[int] = []

    def writer(n: int) -> None:
        for i in range(25):
            logs[n].append(f"s:{n}", [entry(i)], actor="t")
        try:
            logs[n].append("s:shared", [entry(n)], actor="t", expected_version=0)
            wins.append(n)
        except ConcurrencyError:
            pass

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert len(wins) == 1
        seqs = [r.seq for r in logs[0].read()]
        assert seqs == list(range(1, 102))
        assert all(log.head() == logs[0].head() for log in logs)
        assert logs[1].verify().ok
        assert [logs[2].stream_version(f"s:{n}") for n in range(4)] == [25] * 4
    finally:
        for log in logs:
            log.close()


def test_retry_from_another_client_is_idempotent(nats_node: Cluster) -> None:  # noqa: F811
    """A retry with the same event ids through a fresh client writes nothing."""
    url = stream_url(nats_node)
    with EventLog.open(url) as first:
        done = first.append("s:a", [entry(1)], actor="t", event_ids=["id-1"])
    with EventLog.open(url) as second:
        again = second.append("s:a", [entry(1)], actor="t", event_ids=["id-1"])
        assert again.duplicate and again.first_seq == done.first_seq
        assert second.head().seq == 1 and second.seq_of("id-1") == 1


def test_erase_deletes_the_payload_on_the_server(nats_node: Cluster) -> None:  # noqa: F811
    """After erase the payload message is gone from the stream (not only hidden),
    the chain verifies, and purge reports the Raft bound."""
    url = stream_url(nats_node)
    with EventLog.open(url) as log:
        log.append("s:a", [entry(1), entry(2)], actor="t")
        log.erase([1], EntriesDeleted(request_id="r1", entry_ids=("e1",), erased_seqs=(1,)),
                  stream="system", actor="dpo")
        store = log.backend.store  # type: ignore[attr-defined]
        index = store.catch_up()
        pointer = store.chunk_records([1])[0].payload_seq
        assert store.payloads([pointer]) == {}
        assert 1 in index.erased and log.verify().ok
        report = log.purge()
        assert any(f.startswith("raft-log-bound:") for f in report.files_rewritten)
    with EventLog.open(url) as other:  # another client sees the erasure
        assert other.get(1).event is None and other.get(2).event is not None


def test_memory_log_on_a_shared_log(nats_node: Cluster, tmp_path: Path) -> None:  # noqa: F811
    """Two hosts (two data dirs) over one stream: each keeps its own projections,
    and the second catches up with what the first wrote."""
    from commands import MemoryLog

    url = stream_url(nats_node)
    with MemoryLog.open(tmp_path / "a", log=url, embedder=None) as a:
        sid = a.start_session(user_id="u1")
        a.add_message(sid, role="user", content="the shared log holds this note")
    with MemoryLog.open(tmp_path / "b", log=url, embedder=None) as b:
        hits = b.search("shared note")
        assert [h.session_id for h in hits] == [sid]
        assert b.verify().ok
    assert not (tmp_path / "a" / "log").exists()
