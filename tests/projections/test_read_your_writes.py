"""An append that returned is visible to the next read, from any process or Projections instance.

The writer and the second reader are this very file run as a script (see ``_writer``
and ``_reader``). The writer appends one entry at a time and, after each append
returns, writes a line ``k entry_id seq`` to a side file. Each reader repeatedly
takes the last complete line, then checks in a new read through its own
:class:`Projections` that this entry (and every earlier one) is visible, and
that a search for the entry's unique word finds it.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import tantivy

from eventstore import EntryRecorded, EventLog, SessionStarted
from projections import Projections, SearchQuery, run_search

SHARDS = 2
APPENDS = 300
T0 = 1_767_225_600_000_000
FILLER = ["latency", "schema", "deploy", "queue", "retry", "cache"]


def _entry(k: int) -> EntryRecorded:
    """The ``k``-th entry; ``w{k:03d}`` occurs in no other entry (and, at four
    characters, matches no other word by prefix or edit distance)."""
    return EntryRecorded(entry_id=f"rw{k:04d}", kind="message", occurred_at=T0 + k,
                         content=f"{FILLER[k % len(FILLER)]} note w{k:03d} {FILLER[k * 7 % 6]}",
                         session_id=f"s{k % 2}")


def _start_store(root: Path) -> None:
    root.mkdir(exist_ok=True)
    with EventLog.open(root / "log") as log:
        for i in range(2):
            log.append(f"session:s{i}", [SessionStarted(session_id=f"s{i}", user_id="u")], actor="t")


def _writer(root: str, side_file: str, count: int) -> None:
    """Append ``count`` entries one at a time; after each returns, record it in the side file.

    Pauses of 0-20 ms (none, one time in four) let the readers check most appends
    while they still sometimes lag several appends behind.
    """
    rng = random.Random()
    with EventLog.open(Path(root) / "log") as log, open(side_file, "a", encoding="ascii") as side:
        for k in range(count):
            event = _entry(k)
            seq = log.append(f"session:{event.session_id}", [event], actor="writer").first_seq
            side.write(f"{k} {event.entry_id} {seq}\n")
            side.flush()
            if rng.random() < 0.75:
                time.sleep(rng.uniform(0, 0.02))


def _last_returned(side_file: Path) -> tuple[int, str, int] | None:
    """The last append the writer saw return (a line torn mid-write does not count)."""
    try:
        text = side_file.read_text(encoding="ascii")
    except FileNotFoundError:
        return None
    lines = text.split("\n")[:-1]
    if not lines:
        return None
    k, eid, seq = lines[-1].split(" ")
    return int(k), eid, int(seq)


def _check_visible(proj: Projections, k: int, eid: str, seq: int, who: str) -> None:
    """A new read shows entry ``k`` and every earlier one; a search finds entry ``k``."""
    with proj.read() as views:
        assert views.checkpoint() >= seq, f"{who}: read at checkpoint {views.checkpoint()} < {seq}"
        view = views.entry(eid)
        assert view is not None and view.entry is not None, f"{who}: {eid} (seq {seq}) not visible"
        assert view.entry == _entry(k) and view.recorded_seq == seq, who
        missing = [j for j in range(k) if views.entry(f"rw{j:04d}") is None]
        assert not missing, f"{who}: entries {missing[:5]} missing after {eid} was seen"
        assert views.counters()["entries"] >= k + 1, who
    proj.catch_up(search=True)
    assert proj.search_index is not None
    hits = run_search(proj.search_index, SearchQuery(text=f"w{k:03d}"), None)
    assert seq in [h.rseq for h in hits], f"{who}: search for w{k:03d} misses seq {seq}: {hits}"


def _reader(root: str, side_file: str, count: int, who: str = "reader") -> int:
    """Check the last returned append until the writer's last one was checked; return how many
    distinct appends were checked right after they returned."""
    side = Path(side_file)
    checks: set[int] = set()
    deadline = time.monotonic() + 120
    with EventLog.open(Path(root) / "log") as log:
        proj = Projections(Path(root), log, shards=SHARDS)
        try:
            while time.monotonic() < deadline:
                last = _last_returned(side)
                if last is None:
                    time.sleep(0.001)
                    continue
                _check_visible(proj, *last, who=f"{who} after append {last[0]}")
                checks.add(last[0])
                if last[0] == count - 1:
                    return len(checks)
        finally:
            proj.close()
    raise AssertionError(f"{who}: the writer never finished")


def _live_state(proj: Projections) -> dict[str, Any]:
    """Every views database, and every live search document's (rseq, from_seq, to_seq)."""
    proj.catch_up(search=True)
    assert proj.views is not None and proj.search_index is not None
    docs = []
    for shard in proj.search_index.shards:
        searcher = shard.index.searcher()
        addrs = [a for _, a in searcher.search(tantivy.Query.all_query(), 100_000, count=False).hits]
        cols = [searcher.fast_field_values(f, addrs) for f in ("rseq", "from_seq", "to_seq")]
        docs.append(sorted((int(r), int(f), int(t)) for r, f, t in zip(*cols, strict=True) if r))
    return {"views": proj.views.dump(), "search": docs}


def test_append_visible_to_next_read_in_other_processes(tmp_path: Path) -> None:
    """Every read made after an append returned, in either of two reader processes, shows that
    append in the views and in search, and the projections built concurrently equal a replay."""
    root = tmp_path / "store"
    side = tmp_path / "side.txt"
    _start_store(root)
    with EventLog.open(root / "log") as log:
        proj = Projections(root, log, shards=SHARDS)  # opened before the writer starts
        try:
            proj.catch_up(search=True)
            script = [sys.executable, __file__]
            with open(tmp_path / "writer.err", "wb") as w_err, open(tmp_path / "reader.err", "wb") as r_err:
                writer = subprocess.Popen([*script, "writer", str(root), str(side), str(APPENDS)],
                                          stderr=w_err)
                reader = subprocess.Popen([*script, "reader", str(root), str(side), str(APPENDS)],
                                          stdout=subprocess.PIPE, stderr=r_err, text=True)
            try:
                mine = _reader(str(root), str(side), APPENDS, who="test process")
                assert writer.wait(60) == 0, (tmp_path / "writer.err").read_text()
                out, _ = reader.communicate(timeout=120)
                assert reader.returncode == 0, (tmp_path / "reader.err").read_text()
            finally:
                for proc in (writer, reader):
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
            print(f"appends checked first-hand: test process {mine}, reader process {out.strip()}")
            assert mine >= 5 and int(out) >= 5  # the reads did interleave with the appends
            head = log.head().seq
            with proj.read() as views:
                assert views.checkpoint() == head == APPENDS + 2
                assert views.counters()["entries"] == APPENDS
                assert views.counters()["events"] == head  # each event applied exactly once
            live = _live_state(proj)
            assert sum(len(d) for d in live["search"]) == APPENDS
            proj.replay()
            assert _live_state(proj) == live
        finally:
            proj.close()


def test_append_visible_to_next_read_across_instances_in_one_process(tmp_path: Path) -> None:
    """Two Projections instances (and two logs) on one data dir in one process each see every
    append that returned, in the views and in search, also after the other one replayed."""
    root = tmp_path / "store"
    _start_store(root)
    rng = random.Random(7)
    with EventLog.open(root / "log") as log_a, EventLog.open(root / "log") as log_b:
        a = Projections(root, log_a, shards=SHARDS)
        b = Projections(root, log_b, shards=SHARDS)
        try:
            assert a.views is not None and b.views is not None
            assert a.views.shared is b.views.shared  # one environment per path per process
            for k in range(60):
                event = _entry(k)
                writer = rng.choice([log_a, log_b])
                seq = writer.append(f"session:{event.session_id}", [event], actor="t").first_seq
                for proj, name in rng.sample([(a, "a"), (b, "b")], 2):
                    _check_visible(proj, k, event.entry_id, seq, who=f"instance {name} after append {k}")
                if k % 20 == 19:
                    rng.choice([a, b]).replay()
            assert _live_state(a) == _live_state(b)
        finally:
            a.close()
            b.close()


if __name__ == "__main__":
    if sys.argv[1] == "writer":
        _writer(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        print(_reader(sys.argv[2], sys.argv[3], int(sys.argv[4]), who="reader process"))
