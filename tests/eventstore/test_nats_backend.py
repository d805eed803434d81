"""What the NATS backend adds to the contract: its location, the refusal of an
old server, concurrent writers on one stream, retries by event id from another
client, erasure on the server, and a MemoryLog whose log is shared.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from nats.errors import (
    AuthorizationError,
    ConnectionReconnectingError,
    MaxPayloadError,
    NoRespondersError,
    StaleConnectionError,
)
from nats.errors import TimeoutError as NatsTimeout

from eventstore import (
    ConcurrencyError,
    EntriesDeleted,
    EventLog,
    InvalidInputError,
    MemlogError,
    SizeLimitError,
)
from eventstore.nats import NatsUnavailableError, NatsUnsupportedError, parse_location
from eventstore.nats.client import NatsApiError, NatsClient, api_reply, check_version, is_transient

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
    """The INFO version is parsed; a server before 2.12 is refused (E_UNSAFE_STORE)
    with the version it has, the one needed, and why."""
    for old in ("2.9.25", "2.10.0", "2.11.9", "v2.11.0-beta.2", "garbage", ""):
        with pytest.raises(NatsUnsupportedError, match=r"needs 2\.12 or newer") as info:
            check_version(old)
        assert old in str(info.value) and "atomic batch" in str(info.value)
        assert info.value.code == "E_UNSAFE_STORE"
    for new in ("2.12.0", "v2.12.1", "2.15.1", "2.16.0-RC.1", "3.0.0"):
        check_version(new)


@pytest.mark.parametrize("exc", [
    NoRespondersError(), NatsTimeout(), ConnectionReconnectingError(), StaleConnectionError(),
    NatsApiError("temporarily unavailable", status=503, err_code=10008),
    NatsApiError("duplicate message id is in process", status=409, err_code=10158),
    NatsApiError("atomic publish too many inflight", status=429, err_code=10210),
    NatsApiError("cluster can not handle request", status=500, err_code=10009),
    NatsApiError("expected last sequence per subject temporarily unavailable", status=503, err_code=10163),
])
def test_retry_answers_are_retried(exc: Exception) -> None:
    """Answers that mean "retry" are retried until they stop (here: the third call succeeds)."""
    assert is_transient(exc)
    calls = []

    async def attempt() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise exc
        return "done"

    assert asyncio.run(_client(5.0).retry(attempt, "test")) == "done" and len(calls) == 3


def test_a_retry_answer_that_never_stops_becomes_unavailable() -> None:
    """Past the location's timeout: NatsUnavailableError, code E_STORAGE_IO."""
    async def attempt() -> str:
        raise NatsApiError("temporarily unavailable", status=503, err_code=10008)

    with pytest.raises(NatsUnavailableError) as info:
        asyncio.run(_client(0.3).retry(attempt, "publish"))
    assert info.value.code == "E_STORAGE_IO" and "did not answer in time" in str(info.value)


@pytest.mark.parametrize(("exc", "kind", "code"), [
    (NatsApiError("wrong last sequence: 4", status=400, err_code=10071), NatsApiError, "E_STORAGE_IO"),
    (NatsApiError("not currently supported in clustered mode", status=503, err_code=10036),
     NatsUnsupportedError, "E_UNSAFE_STORE"),
    (NatsApiError("atomic publish is disabled", status=400, err_code=10174), NatsApiError, "E_STORAGE_IO"),
    (MaxPayloadError(), SizeLimitError, "E_SIZE_LIMIT"),
    (AuthorizationError(), NatsApiError, "E_STORAGE_IO"),
])
def test_other_answers_are_clear_errors_at_once(exc: Exception, kind: type[MemlogError], code: str) -> None:
    """Any other failure is raised after one call, as a MemlogError subclass with a stable code."""
    assert not is_transient(exc)
    calls = []

    async def attempt() -> str:
        calls.append(1)
        raise exc

    with pytest.raises(kind) as info:
        asyncio.run(_client(5.0).retry(attempt, "test"))
    assert isinstance(info.value, MemlogError) and info.value.code == code and len(calls) == 1


def test_jetstream_error_replies_are_parsed() -> None:
    """A JSON error reply names JetStream's code and text; a bare 503 is "no responders"."""
    error = {"code": 409, "err_code": 10158, "description": "duplicate message id is in process"}
    reply = SimpleNamespace(headers=None, data=json.dumps({"error": error}).encode())
    with pytest.raises(NatsApiError) as info:
        api_reply(reply)  # type: ignore[arg-type]
    assert (info.value.status, info.value.err_code) == (409, 10158) and is_transient(info.value)
    with pytest.raises(NoRespondersError):
        api_reply(SimpleNamespace(headers={"Status": "503"}, data=b""))  # type: ignore[arg-type]
    assert api_reply(SimpleNamespace(headers=None, data=b'{"seq": 3}')) == {"seq": 3}  # type: ignore[arg-type]


def _client(timeout: float) -> NatsClient:
    """A client's retry logic, without a connection."""
    client = NatsClient.__new__(NatsClient)
    client.timeout = timeout
    client.attempt_timeout = timeout
    return client


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


def test_a_stale_index_is_never_taken_for_a_conflict(nats_node: Cluster) -> None:  # noqa: F811
    """A client whose last append committed at once skips the catch-up before
    its next one (its commit's compare-and-set proves the index current); what
    another client wrote meanwhile is then caught up, never refused: an expected
    version or an erased seq its stale index does not know yet."""
    url = stream_url(nats_node)
    with EventLog.open(url) as a, EventLog.open(url) as b:
        a.append("s:a", [entry(1)], actor="t")
        a.append("s:a", [entry(2)], actor="t")
        store = a.backend.store  # type: ignore[attr-defined]
        assert store.contended is False
        b.append("s:b", [entry(3), entry(4)], actor="t")
        assert a.append("s:b", [entry(5)], actor="t", expected_version=2).first_seq == 5
        b.append("s:b", [entry(6)], actor="t")
        a.append("s:a", [entry(7)], actor="t")  # lost the race once: then committed
        b.append("s:c", [entry(8)], actor="t")
        a.append("s:a", [entry(9)], actor="t")
        a.append("s:a", [entry(10)], actor="t")
        assert store.contended is False
        last = b.append("s:c", [entry(11)], actor="t").first_seq
        a.erase([last], EntriesDeleted(request_id="r", entry_ids=("e11",), erased_seqs=(last,)),
                stream="system", actor="dpo")
        with pytest.raises(ConcurrencyError):
            a.append("s:b", [entry(12)], actor="t", expected_version=1)
        assert a.head().seq == b.head().seq == last + 1 and a.verify().ok


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


def test_log_takes_only_a_nats_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """log= / --log / MEMLOG_LOG_URL name a server, never a directory; MEMLOG_LOG
    stays the JSON-logs switch; tls:// is refused by name."""
    from click.testing import CliRunner

    from commands import MemoryLog
    from commands.cli import cli
    from eventstore import UsageError

    with pytest.raises(UsageError):
        MemoryLog.open(tmp_path / "a", log="json", embedder=None)
    with pytest.raises(InvalidInputError, match="tls"):
        parse_location("tls://127.0.0.1:4222/x")
    monkeypatch.chdir(tmp_path)
    args = ["--json", "session", "start", "--user", "u1"]
    result = CliRunner().invoke(cli, ["--dir", str(tmp_path / "b"), *args], env={"MEMLOG_LOG": "json"})
    assert result.exit_code == 0 and not (tmp_path / "json").exists()
    result = CliRunner().invoke(cli, ["--dir", str(tmp_path / "c"), *args], env={"MEMLOG_LOG_URL": "json"})
    assert result.exit_code != 0 and "E_USAGE" in result.output + result.stderr
    assert not (tmp_path / "json").exists()


def test_purge_sweeps_orphan_payloads_once(nats_node: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """A payload no chunk names (an append that died between its payloads and its
    commit) is erased by the purge once it is older than ORPHAN_AGE; named
    payloads stay; the next purge starts where this one stopped."""
    from eventstore.nats import erase

    monkeypatch.setattr(erase, "ORPHAN_AGE", 0.0)
    with EventLog.open(stream_url(nats_node)) as log:
        log.append("s:a", [entry(1)], actor="t")
        store = log.backend.store  # type: ignore[attr-defined]
        ack = store.client.run(store.client.publish(store.p_subject, b"\0" * 40, {"Nats-Msg-Id": "p.dead"}))
        log.append("s:a", [entry(2)], actor="t")
        report = log.purge()
        assert report.bytes_wiped == 1 and store.payloads([ack["seq"]]) == {}
        assert [r.event is not None for r in log.read()] == [True, True] and log.verify().ok
        swept = store.swept_to
        assert swept >= ack["seq"]
        assert log.purge().bytes_wiped == 0 and store.swept_to >= swept
