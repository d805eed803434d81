"""Failures on a 3-node R3 JetStream cluster, with real
server processes and real files:

- kill -9 a node (the stream's leader) while 4 writer processes append, each
  writing its acknowledged event ids to a file, fsynced after each ack: none is
  lost, the chain verifies, seqs have no gap and no duplicate, writes resume
  after the failover and the clients reconnect on their own;
- two hosts (two data dirs, each with its own projections) over the same stream
  converge to equal views dumps;
- after a deletion and its purge, no byte of the content is left in any node's
  storage directory: the message blocks at once, the Raft logs within the
  stated bound (:data:`eventstore.nats.RAFT_BOUND_SECONDS`).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from eventstore import EntriesDeleted, EntryRecorded, EventLog, LogSettings, PurgeUnverifiedError
from eventstore.nats import RAFT_BOUND_SECONDS

from ..conftest import scan_dir
from .nats_fixtures import Cluster, nats_cluster, stream_url  # noqa: F401

pytestmark = [pytest.mark.nats_cluster, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
WRITER = Path(__file__).with_name("nats_fixtures.py")


# -- helpers -------------------------------------------------------------------


def _stream_info(log: EventLog) -> dict[str, Any]:
    store = log.backend.store  # type: ignore[attr-defined]
    info: dict[str, Any] = store.client.run(store.client.api(f"$JS.API.STREAM.INFO.{store.name}"))
    return info


def _leader(log: EventLog) -> int:
    """The index of the node that leads the log's stream (node names are n<i>)."""
    deadline = time.monotonic() + 20
    while True:
        leader = (_stream_info(log).get("cluster") or {}).get("leader")
        if leader:
            return int(str(leader).removeprefix("n"))
        assert time.monotonic() < deadline, "the stream has no leader"
        time.sleep(0.1)


def _seed(cluster: Cluster, node: int, stream: str) -> str:
    """A location naming one node only: the client learns the others from it."""
    return f"nats://127.0.0.1:{cluster.nodes[node].client_port}/{stream}"


def _acks(path: Path) -> list[tuple[str, int, float]]:
    """(event id, seq, time) of every acknowledged append a writer recorded."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "A":
            out.append((parts[1], int(parts[2]), float(parts[3])))
    return out


def _wait(what: str, check: Any, timeout: float, procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        for proc in procs:
            assert proc.poll() is None, f"a writer exited early ({proc.returncode}) while waiting for {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _scan(dirs: list[Path], needle: bytes, *, raft: bool = True) -> list[str]:
    """Files under ``dirs`` holding ``needle``; ``raft=False`` skips the Raft
    logs (``_js_``) and looks at the message blocks and indexes only."""
    hits = []
    for root in dirs:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            if not raft and "_js_" in path.parts:
                continue
            try:
                if needle in path.read_bytes():
                    hits.append(str(path.relative_to(root.parent)))
            except OSError:  # a block removed while we scan
                continue
    return hits


@pytest.fixture(scope="module", autouse=True)
def erasure_url(nats_cluster: Cluster) -> str:  # noqa: F811
    """The stream of the erasure test, created when the module starts: each server
    compacts a stream's Raft log on a timer that starts with the stream (2 min
    plus up to 1 min), so the other tests run while the first tick comes."""
    url = stream_url(nats_cluster)
    EventLog.open(url).close()
    return url


# -- kill -9 under four writer processes -----------------------------------------


def _start_writers(cluster: Cluster, stream: str, seeds: list[int],
                   tmp_path: Path) -> tuple[list[subprocess.Popen[bytes]], list[Path], Path]:
    stop = tmp_path / "stop"
    outs = [tmp_path / f"w{n}.acks" for n in range(len(seeds))]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, str(WRITER), "writer", _seed(cluster, seed, stream), f"w{n}",
                               str(outs[n]), str(stop), "240"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for n, seed in enumerate(seeds)]
    return procs, outs, stop


def _stop_writers(procs: list[subprocess.Popen[bytes]], stop: Path) -> None:
    stop.touch()
    for proc in procs:
        try:
            _, err = proc.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        assert proc.returncode == 0, err.decode(errors="replace")[-2000:]


def _check_log(url: str, outs: list[Path]) -> dict[str, Any]:
    """No acknowledged id lost, seqs gapless without duplicates, chain verified."""
    with EventLog.open(url) as log:
        assert log.verify().ok
        records = list(log.read())
        seqs = [r.seq for r in records]
        assert seqs == list(range(1, log.head().seq + 1))  # no gap, no duplicate
        ids = [r.id for r in records]
        assert len(set(ids)) == len(ids)
        at = dict(zip(ids, seqs, strict=True))
        for n, out in enumerate(outs):
            acked = _acks(out)
            assert acked, f"writer {n} acknowledged nothing"
            for eid, seq, _ in acked:
                assert at.get(eid) == seq, f"acknowledged event {eid} (seq {seq}) is not in the log"
            stream = [r.id for r in log.read_stream(f"s:w{n}")]
            # acknowledged appends in order; at most one more (landed, its ack cut by the stop)
            assert stream[:len(acked)] == [eid for eid, _, _ in acked]
            assert len(stream) <= len(acked) + 1
        return {"events": len(records), "head": log.head().seq}


def test_kill_9_the_leader_under_four_writer_processes(nats_cluster: Cluster,  # noqa: F811
                                                       tmp_path: Path) -> None:
    url = stream_url(nats_cluster)
    stream = url.rsplit("/", 1)[1]
    with EventLog.open(url) as log:  # creates the R3 stream
        assert log.backend.replicas == 3  # type: ignore[attr-defined]
        leader = _leader(log)
    others = [i for i in range(3) if i != leader]
    # writers 0 and 1 know only the node that will be killed: they must reconnect elsewhere
    procs, outs, stop = _start_writers(nats_cluster, stream, [leader, leader, *others], tmp_path)
    try:
        _wait("10 acks per writer", lambda: all(len(_acks(o)) >= 10 for o in outs), 60, procs)
        killed_at = time.monotonic()
        nats_cluster.kill(leader)
        _wait("10 acks per writer after the kill",
              lambda: all(sum(t > killed_at for _, _, t in _acks(o)) >= 10 for o in outs), 90, procs)
        nats_cluster.restart(leader)
        before = [len(_acks(o)) for o in outs]
        _wait("5 acks per writer after the restart",
              lambda: all(len(_acks(o)) >= b + 5 for o, b in zip(outs, before, strict=True)), 60, procs)
    finally:
        _stop_writers(procs, stop)
    resumed = max(min(t for _, _, t in _acks(o) if t > killed_at) - killed_at for o in outs)
    print(f"failover: every writer acknowledged again within {resumed:.2f} s of the kill")
    codes = sorted({line.split()[1] for o in outs for line in o.read_text().splitlines() if line[0] == "E"})
    print(f"errors the writers saw and retried: {codes}")
    assert set(codes) <= {"E_STORAGE_IO", "E_CONCURRENT_MOD"}  # unavailable, or lost the race
    reconnects = [int(o.read_text().splitlines()[-1].split()[1]) for o in outs]
    assert reconnects[0] >= 1 and reconnects[1] >= 1  # on their own, the same client object
    found = _check_log(url, outs)
    # the same through the CLI: memlog --log URL audit verify
    from click.testing import CliRunner

    from commands.cli import cli

    args = ["--dir", str(tmp_path / "host"), "--log", url, "--json", "audit", "verify"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0 and json.loads(result.stdout)["ok"] is True
    # the restarted node catches up: a client that knows only it reads the same head
    with EventLog.open(_seed(nats_cluster, leader, stream)) as log:
        deadline = time.monotonic() + 30
        while log.head().seq < found["head"] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert log.head().seq == found["head"] and log.verify().ok


# -- a purge with a node down names it -------------------------------------------


def test_purge_names_a_replica_that_has_not_erased(nats_cluster: Cluster, tmp_path: Path) -> None:  # noqa: F811
    """With a follower down, the purge waits, then raises PurgeUnverifiedError
    naming it; once it is back and caught up, the purge passes and the node's
    message blocks hold no byte of the content."""
    url = stream_url(nats_cluster)
    secret = ("zq" + secrets.token_hex(12)).encode()
    with EventLog.open(url, LogSettings(purge_lock_timeout=2.0)) as log:
        log.append("s:a", [EntryRecorded(entry_id="e1", kind="message", content=secret.decode(),
                                         occurred_at=1_700_000_000_000_000, session_id="s1")], actor="t")
        down = next(i for i in range(3) if i != _leader(log))
        deadline = time.monotonic() + 10  # its message blocks hold the payload (flushed) before the kill
        while not _scan([nats_cluster.store_dirs[down]], secret, raft=False):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        nats_cluster.kill(down)
        log.erase([1], EntriesDeleted(request_id="r1", entry_ids=("e1",), erased_seqs=(1,)),
                  stream="system", actor="dpo")
        with pytest.raises(PurgeUnverifiedError, match=f"n{down}") as info:
            log.purge()
        assert info.value.code == "E_PURGE_UNVERIFIED" and secret.decode() not in str(info.value)
        assert _scan([nats_cluster.store_dirs[down]], secret, raft=False)  # it still holds the payload
        nats_cluster.restart(down)
        deadline = time.monotonic() + 30
        while True:
            try:
                report = log.purge()
                break
            except PurgeUnverifiedError:
                assert time.monotonic() < deadline, "the restarted node never caught up"
        assert f"nats:{url.rsplit('/', 1)[1]}@n{down}" in report.files_rewritten
        assert _scan(nats_cluster.store_dirs, secret, raft=False) == [] and log.verify().ok


# -- two hosts converge --------------------------------------------------------


def _host_work(mem: Any, name: str, shared: dict[str, str], errors: list[BaseException]) -> None:
    try:
        sid = mem.start_session(user_id=f"user-{name}", agent_ids=[f"agent-{name}"])
        texts = [f"host {name} says hello number {i}" for i in range(12)]
        texts[0] += f" {shared['secret']}"
        ids = [mem.add_message(sid, role="user", content=text) for text in texts]
        mem.add_task(sid, content=f"task from host {name}", tags=["team"])
        mem.remember(f"user-{name}", "editor", f"host {name} prefers vim {shared['secret']}")
        shared[name] = ids[0]
    except BaseException as exc:  # re-raised by the test thread
        errors.append(exc)


def _views(mem: Any) -> dict[str, Any]:
    """Every views database of ``mem``, caught up (as tests/commands' views_dump)."""
    mem.proj.catch_up(search=True)
    dump: dict[str, Any] = mem.proj.views.dump()
    return dump


def _write_at_once(a: Any, b: Any, shared: dict[str, str]) -> dict[str, Any]:
    """Hosts A and B write at the same time; their views (and searches) agree."""
    errors: list[BaseException] = []
    threads = [threading.Thread(target=_host_work, args=(m, n, shared, errors))
               for m, n in ((a, "a"), (b, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    dump_a, dump_b = _views(a), _views(b)
    assert sum(len(rows) for rows in dump_a.values()) > 50  # both hosts' writes are in it
    assert dump_a == dump_b
    assert [h.id for h in a.search("hello", limit=50, record_access=False)] == \
        [h.id for h in b.search("hello", limit=50, record_access=False)]
    return dump_a


def test_two_hosts_converge_and_both_purge(nats_cluster: Cluster, tmp_path: Path) -> None:  # noqa: F811
    """Two hosts write at once and converge to equal views (a third, replaying
    from nothing, too); a deletion made on host A leaves no byte of the content
    in A's data dir, in B's (purged at B's next write), in E's (purged by its
    ``memlog maintain``), in C's (purged when C opens again) or in any node's
    message blocks."""
    from commands import MemoryLog

    url = stream_url(nats_cluster)
    secret = "zq" + secrets.token_hex(12)
    shared: dict[str, str] = {"secret": secret}
    with MemoryLog.open(tmp_path / "c", log=url, embedder=None) as c:
        pass  # host C exists before the writes, and is closed during the deletion
    with MemoryLog.open(tmp_path / "a", log=url, embedder=None) as a, \
            MemoryLog.open(tmp_path / "b", log=url, embedder=None) as b, \
            MemoryLog.open(tmp_path / "e", log=url, embedder=None) as e:
        dump_a = _write_at_once(a, b, shared)
        assert _views(e) == dump_a  # E, open all along, caught up: it holds the content too
        with MemoryLog.open(tmp_path / "c", log=url, embedder=None) as c:
            assert _views(c) == dump_a  # C caught up: its projections hold the content now
        needle = secret.encode()
        held = [h for h in "abce" if scan_dir(tmp_path / h, [needle])]
        assert held == ["a", "b", "c", "e"]  # the scan sees the copies it must see gone
        # the views hold memory values (the search index holds no text verbatim)
        report = a.delete(ids=[shared["a"], shared["b"]], reason="gdpr", requested_by="dpo")
        assert report.purged and report.verified
        for user in ("user-a", "user-b"):
            assert a.forget(user, "editor", requested_by="dpo").purged
        assert scan_dir(tmp_path / "a", [needle]) == {}
        assert scan_dir(tmp_path / "b", [needle])  # B has not written since
        # B's next write purges
        b.add_message(b.start_session(user_id="user-b"), role="user", content="later")
        assert scan_dir(tmp_path / "b", [needle]) == {}
        dry = e.maintain(dry_run=True)  # E only reads: its maintenance purges
        assert [d.step for s in dry.steps for d in s.due] == ["shared_purge"]
        assert e.maintain().failed == 0 and scan_dir(tmp_path / "e", [needle]) == {}
        assert e.maintain(dry_run=True).due == 0
        assert _scan(nats_cluster.store_dirs, needle, raft=False) == []
        dump_a, dump_b = _views(a), _views(b)
        assert dump_a == dump_b and a.verify().ok
    with MemoryLog.open(tmp_path / "c", log=url, embedder=None) as c:  # C purges as it opens
        assert scan_dir(tmp_path / "c", [needle]) == {}
        assert _views(c) == dump_a
    with MemoryLog.open(tmp_path / "d", log=url, embedder=None) as d:  # D replays from nothing
        assert _views(d) == dump_a and scan_dir(tmp_path / "d", [needle]) == {}


# -- erasure reaches every node ------------------------------------------------


def test_deletion_leaves_no_byte_on_any_node(nats_cluster: Cluster, erasure_url: str,  # noqa: F811
                                             tmp_path: Path) -> None:
    """Content in every node's message blocks before; none right after the
    deletion's purge; none in the Raft logs within RAFT_BOUND_SECONDS. The wait
    is real: nats-server compacts a stream's Raft log on a timer (2 min plus a
    random 0-60 s, per stream and server start) that no setting shortens, so
    this test polls until clean (measured: 160-175 s after the delete, the
    stream having been created when the module started)."""
    from commands import MemoryLog

    url = erasure_url
    secret = "zq" + secrets.token_hex(12)
    needle = secret.encode()
    dirs = nats_cluster.store_dirs
    with MemoryLog.open(tmp_path / "a", log=url, embedder=None) as mem:
        sid = mem.start_session(user_id="u1")
        doomed = mem.add_message(sid, role="user", content=f"my secret is {secret}")
        mem.add_message(sid, role="user", content="this one stays")
        # the scan sees the content where it is: every node's message blocks (and Raft logs)
        deadline = time.monotonic() + 10
        while len(_scan(dirs, needle, raft=False)) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(_scan(dirs, needle, raft=False)) == 3
        report = mem.delete(ids=[doomed], reason="gdpr", requested_by="dpo")
        assert report.purged and f"raft-log-bound:{int(RAFT_BOUND_SECONDS)}s" in report.files_rewritten
        erased_at = time.monotonic()
        assert _scan(dirs, needle, raft=False) == []  # the message blocks, on every node, at once
        assert mem.verify().ok
        while (hits := _scan(dirs, needle)) and time.monotonic() - erased_at < RAFT_BOUND_SECONDS:
            time.sleep(2)
        print(f"raft logs clean after {time.monotonic() - erased_at:.1f} s")
        assert hits == [], f"content still in {hits} after {RAFT_BOUND_SECONDS:.0f} s"
