"""A process killed with SIGKILL during a replay or a catch-up never damages the projections.

The killed side of these tests is this very file run as a script (see ``_child``):
a fresh interpreter opens the log and the projections, prints ``start <head>
<views checkpoint>``, runs a replay or a catch-up printing ``p <n>`` for each
progress call, prints ``done`` and idles. The parent kills it at a random moment and checks the store.

Projections are compared by :func:`snapshot`: a digest of every views database
(raw keys and values) plus every live search document ``(rseq, from_seq, to_seq)``
and the result sets of a few text searches. Search *rankings* are not compared:
BM25 scores depend on the segment layout, which differs between histories.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from eventstore import (
    AppendRequest,
    DecayApplied,
    DeletedRef,
    DeletionCriteria,
    DeletionRequested,
    EntriesAccessed,
    EntriesDeleted,
    EntryChanges,
    EntryRecorded,
    EntryRedacted,
    EntryUpdated,
    Event,
    EventLog,
    LogSettings,
    MemoryForgotten,
    MemorySaved,
    SessionArchived,
    SessionCompacted,
    SessionRestored,
    SessionStarted,
    TaskDetails,
)
from projections import Projections, SearchQuery, run_search

SHARDS = 2
SESSIONS = 4
BASE_ENTRIES = 2_000  # applied to the projections in the template
EXTRA_EVENTS = 60_000  # appended while the projections are behind
T0 = 1_767_225_600_000_000
WORDS = ["postgres", "cache", "latency", "schema", "deploy", "index", "queue", "retry", "alpha",
         "replica", "shard", "token", "vacuum", "planner", "canary", "rollback"]
KINDS = ("message", "message", "decision", "finding", "lesson", "task")
MARKERS = ["zqaa", "zqbk", "zqcz", "zqmd", "zqxy", "zqzz"]  # each in ~1/676 of the entries
QUERIES = [*MARKERS, "zqa", "zqm"]  # exact words, and prefixes of 26 marker words each


# -- a deterministic history: entries, updates, accesses, erasures ------------

def _marker(n: int) -> str:
    """A four-letter word shared by ~1/676 of the entries (no fuzzy match at length 4)."""
    return "zq" + chr(97 + n % 26) + chr(97 + n // 26 % 26)


class _Builder:
    """Appends a history in batches; erasures flush and go through ``log.erase``."""

    def __init__(self, log: EventLog, seed: int) -> None:
        self.log = log
        self.rng = random.Random(seed)
        self.pending: list[AppendRequest] = []
        self.next_seq = log.head().seq + 1
        self.live: list[tuple[str, int, EntryRecorded]] = []  # entry id, seq, event
        self.memories: dict[tuple[str, str], tuple[str, int]] = {}  # (user, key) -> id, seq
        self.n = 0

    def queue(self, stream: str, event: Event) -> int:
        self.pending.append(AppendRequest(stream, [event], "crash-test"))
        self.next_seq += 1
        if len(self.pending) >= 5_000:
            self.flush()
        return self.next_seq - 1

    def flush(self) -> None:
        if self.pending:
            first = self.log.head().seq + 1
            results = self.log.append_many(self.pending)
            assert [r.first_seq for r in results] == list(range(first, first + len(results)))
            self.pending = []
        assert self.log.head().seq == self.next_seq - 1

    def sessions(self) -> None:
        for i in range(SESSIONS):
            self.queue(f"session:s{i}", SessionStarted(session_id=f"s{i}", user_id=f"u{i % 2}",
                                                       agent_ids=("a0", "a1")))

    def entry(self) -> None:
        rng, n = self.rng, self.n
        self.n += 1
        kind = rng.choice(KINDS)
        sid = f"s{rng.randrange(SESSIONS)}"
        words = [*rng.sample(WORDS, rng.randint(2, 6)), _marker(n)]
        rng.shuffle(words)
        event = EntryRecorded(
            entry_id=f"e{n:06d}", kind=kind, content=" ".join(words),  # type: ignore[arg-type]
            occurred_at=T0 + n * 1_000_000, session_id=sid, user_id=f"u{int(sid[1:]) % 2}",
            agent_id=f"a{n % 2}", tags=(kind, rng.choice(WORDS)),
            details=TaskDetails(done=False) if kind == "task" else None)
        self.live.append((event.entry_id, self.queue(f"session:{sid}", event), event))

    def step(self) -> None:
        """One event of the mixed history (mostly new entries)."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.93 or len(self.live) < 10:
            self.entry()
        elif roll < 0.96:
            eid = rng.choice(self.live)[0]
            self.queue("entries", EntryUpdated(entry_id=eid, changes=EntryChanges(
                done=rng.random() < 0.5, importance=round(rng.random(), 2),
                tags=(rng.choice(WORDS),))))
        elif roll < 0.975:
            ids = tuple(rng.choice(self.live)[0] for _ in range(rng.randint(1, 3)))
            self.queue("access", EntriesAccessed(entry_ids=ids, at=T0 + self.n * 1_000_000))
        elif roll < 0.985:
            user, key = rng.choice(["u0", "u1"]), rng.choice(["k_a", "k_b", "k_c"])
            self.n += 1
            mid = f"m{self.n:06d}"
            seq = self.queue(f"user:{user}", MemorySaved(user_id=user, key=key, memory_id=mid,
                                                         content=" ".join(rng.sample(WORDS, 2))))
            self.memories[(user, key)] = (mid, seq)
        elif roll < 0.99 and self.memories:
            (user, key), (mid, _) = self.memories.popitem()
            self.queue(f"user:{user}", MemoryForgotten(user_id=user, key=key, memory_id=mid))
        elif roll < 0.993:
            self.queue("system", DecayApplied(as_of=T0 + self.n * 1_000_000,
                                              rates={"message": round(rng.uniform(0.01, 0.3), 3)}))
        elif roll < 0.996:
            sid = f"s{rng.randrange(SESSIONS)}"
            event: Event = SessionArchived(session_id=sid) if rng.random() < 0.5 \
                else SessionRestored(session_id=sid)
            self.queue(f"session:{sid}", event)
        else:
            eid, _, event_ = self.live.pop(rng.randrange(len(self.live)))
            sid = event_.session_id or "s0"
            self.queue(f"session:{sid}", SessionCompacted(
                session_id=sid, policy="test", removed_entry_ids=(eid,), summary_entry_id=None,
                bytes_before=100, bytes_after=10))

    def delete(self) -> None:
        """A deletion request, then its tombstone erasing the entry's payload."""
        eid, seq, event = self.live.pop(self.rng.randrange(len(self.live)))
        self.n += 1
        rid = f"r{self.n:06d}"
        self.queue("system", DeletionRequested(request_id=rid, reason="test", requested_by="t",
                                               criteria=DeletionCriteria(ids=(eid,))))
        self.flush()
        tomb = EntriesDeleted(request_id=rid, entry_ids=(eid,), erased_seqs=(seq,),
                              counts_by_kind={event.kind: 1},
                              refs=(DeletedRef(eid, event.kind, seq, event.session_id),))
        self.log.erase([seq], tomb, stream="system", actor="crash-test")
        self.next_seq += 1

    def forget_memory(self) -> None:
        """A saved memory erased by a tombstone with a ``memory`` ref."""
        if not self.memories:
            return
        (_user, _key), (mid, seq) = self.memories.popitem()
        self.n += 1
        rid = f"r{self.n:06d}"
        self.flush()
        tomb = EntriesDeleted(request_id=rid, entry_ids=(mid,), erased_seqs=(seq,),
                              refs=(DeletedRef(mid, "memory", seq),))
        self.log.erase([seq], tomb, stream="system", actor="crash-test")
        self.next_seq += 1

    def redact(self) -> None:
        """An entry redacted: its payload erased, a redacted copy in the tombstone."""
        eid, seq, event = self.live[self.rng.randrange(len(self.live))]
        self.flush()
        redacted = EntryRecorded(entry_id=eid, kind=event.kind, content="[REDACTED] gone",
                                 occurred_at=event.occurred_at, session_id=event.session_id,
                                 user_id=event.user_id, agent_id=event.agent_id, tags=event.tags)
        self.log.erase([seq], EntryRedacted(entry_id=eid, target_seq=seq, spans={"custom": 1},
                                            reason="r", requested_by="t", redacted=redacted),
                       stream="system", actor="crash-test")
        self.next_seq += 1
        self.live = [e for e in self.live if e[0] != eid]


def _build_template(root: Path) -> dict[str, Any]:
    """A data dir whose projections applied ``BASE_ENTRIES`` entries, with
    ``EXTRA_EVENTS`` more events appended since (some erasing older entries)."""
    root.mkdir()
    with EventLog.open(root / "log", LogSettings(sync=False)) as log:
        b = _Builder(log, seed=20240611)
        b.sessions()
        for _ in range(BASE_ENTRIES):
            b.entry()
        for _ in range(3):
            b.step()
        b.flush()
        base_head = log.head().seq
        proj = Projections(root, log, shards=SHARDS, sync=False)
        try:
            proj.catch_up(search=True)
        finally:
            proj.close()
        for i in range(EXTRA_EVENTS):
            if i % 2_000 == 1_000:
                b.delete()  # the first ones erase entries the projections already applied
            elif i % 15_000 == 7_000:
                b.redact()
            elif i == 30_000:
                b.forget_memory()
            else:
                b.step()
        b.flush()
        head = log.head().seq
        last = b.live[-1][0]
    return {"base_head": base_head, "head": head, "last_entry": last}


# -- comparing projections ----------------------------------------------------

def _views_digest(proj: Projections) -> dict[str, tuple[int, str]]:
    assert proj.views is not None
    shared = proj.views.shared

    def run(txn: Any) -> dict[str, tuple[int, str]]:
        out = {}
        for name, db in shared.dbs.items():
            h = hashlib.sha256()
            count = 0
            for key, value in txn.cursor(db=db):
                h.update(len(key).to_bytes(4, "big"))
                h.update(key)
                h.update(len(value).to_bytes(4, "big"))
                h.update(value)
                count += 1
            out[name.decode()] = (count, h.hexdigest()[:20])
        return out

    return shared.read(run)


def _search_docs(proj: Projections) -> list[tuple[int, str]]:
    """Per shard: how many live documents, and a digest of their (rseq, from, to)."""
    import tantivy

    assert proj.search_index is not None
    out = []
    for shard in proj.search_index.shards:
        searcher = shard.index.searcher()
        hits = searcher.search(tantivy.Query.all_query(), 1_000_000, count=False).hits
        addrs = [addr for _, addr in hits]
        cols = [searcher.fast_field_values(f, addrs) for f in ("rseq", "from_seq", "to_seq")]
        docs = sorted((int(r), int(f), int(t)) for r, f, t in zip(*cols, strict=True) if r)
        out.append((len(docs), hashlib.sha256(repr(docs).encode()).hexdigest()[:20]))
    return out


def snapshot(proj: Projections) -> dict[str, Any]:
    """Catch up views and search, then digest both (see the module docstring)."""
    proj.catch_up(search=True)
    assert proj.search_index is not None
    found = {}
    for text in QUERIES:
        hits = run_search(proj.search_index, SearchQuery(text=text, limit=10_000), None)
        assert len(hits) < 10_000, text  # the whole result set, not a ranked cut
        found[text] = sorted(h.rseq for h in hits)
    return {"views": _views_digest(proj), "search_docs": _search_docs(proj), "search": found}


def _proj_dirs(root: Path) -> list[str]:
    return sorted(p.name for p in root.glob("proj-*"))


def _listing(root: Path, names: list[str], limit: int = 12) -> list[str]:
    """What is left under some projection directories (symlinks marked ``->``)."""
    out = []
    for name in names:
        for path in sorted((root / name).rglob("*")):
            mark = f" -> {os.readlink(path)}" if path.is_symlink() else "/" if path.is_dir() else ""
            out.append(f"{path.relative_to(root)}{mark}")
    return out[:limit]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The template store, and the snapshot of a full replay of its log."""
    root = tmp_path_factory.mktemp("crash") / "template"
    info = _build_template(root)
    ref = root.parent / "reference"
    shutil.copytree(root, ref, symlinks=True)
    with EventLog.open(ref / "log") as log:
        proj = Projections(ref, log, shards=SHARDS)
        try:
            assert proj.replay() == info["head"]
            info["replayed"] = snapshot(proj)
        finally:
            proj.close()
    shutil.rmtree(ref)
    info["root"] = root
    yield info


def _copy(template: dict[str, Any], dest: Path) -> Path:
    shutil.copytree(template["root"], dest, symlinks=True)
    return dest


# -- the child process and how it is killed -----------------------------------

class _Child:
    """A replay or catch-up in a fresh interpreter, its stdout lines collected."""

    def __init__(self, mode: str, root: Path) -> None:
        self.err_path = root.parent / f"{root.name}-child.err"
        with open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen([sys.executable, __file__, mode, str(root)],
                                         stdout=subprocess.PIPE, stderr=err, text=True)
        self.lines: list[list[str]] = []
        self._pump = threading.Thread(target=self._read, daemon=True)
        self._pump.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.split())

    def progress(self) -> list[int]:
        return [int(words[1]) for words in list(self.lines) if words[0] == "p"]

    def done(self) -> bool:
        return ["done"] in self.lines

    def wait_for(self, condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if self.proc.poll() is not None:
                self._pump.join(5)
                pytest.fail(f"the child died before {what}:\n{self.err_path.read_text()}")
            if time.monotonic() > deadline:
                self.kill()
                pytest.fail(f"the child never reached {what}")
            time.sleep(0.0005)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._pump.join(5)

    def check_killed(self) -> None:
        """The child was still running when killed (it did not fail or exit by itself)."""
        assert self.proc.returncode == -signal.SIGKILL, (
            f"the child exited with {self.proc.returncode}:\n{self.err_path.read_text()}")


def _child(mode: str, data_dir: str) -> None:
    """Run in the child: replay or catch up, reporting progress, then idle until killed."""
    root = Path(data_dir)
    with EventLog.open(root / "log") as log:
        proj = Projections(root, log, shards=SHARDS)
        assert proj.views is not None
        print(f"start {log.head().seq} {proj.views.checkpoint()}", flush=True)

        def progress(n: int) -> None:
            print(f"p {n}", flush=True)

        if mode == "replay":
            proj.replay(progress=progress)
        else:
            proj.catch_up(search=True, progress=progress)
        print("done", flush=True)
        time.sleep(300)


def _seed() -> int:
    seed = int(os.environ.get("MEMLOG_TEST_SEED") or random.randrange(1 << 32))
    print(f"seed={seed} (set MEMLOG_TEST_SEED to reproduce)")
    return seed


# -- kill during a replay ------------------------------------------------------

def _check_after_replay_kill(root: Path, log: EventLog, info: dict[str, Any], before: dict[str, Any],
                             where: str) -> None:
    """The projections in use read as before; a replay then succeeds and cleans up."""
    proj = Projections(root, log, shards=SHARDS)
    try:
        with proj.read() as views:
            assert views.checkpoint() == info["head"], where
            last = views.entry(info["last_entry"])
            assert last is not None and last.state == "live", where
        assert snapshot(proj) == before, f"projections changed by the killed replay: {where}"
        assert proj.replay() == info["head"], where
        assert snapshot(proj) == before, f"replay after the kill differs: {where}"
        left = [p for p in _proj_dirs(root) if p != proj.root.name]
        assert not left, f"left-over projections {_listing(root, left)} after the replay: {where}"
    finally:
        proj.close()


KillAt = Callable[[int, _Child, Path, set[str], random.Random], str]


def _replay_kill_trials(tmp_path: Path, template: dict[str, Any], trials: int, kill_at: KillAt) -> None:
    seed = _seed()
    rng = random.Random(seed)
    root = _copy(template, tmp_path / "store")
    with EventLog.open(root / "log") as log:
        proj = Projections(root, log, shards=SHARDS)
        try:
            before = snapshot(proj)
        finally:
            proj.close()
        assert before == template["replayed"], "live catch-up differs from a replay"
        for trial in range(trials):
            old = set(_proj_dirs(root))
            child = _Child("replay", root)
            try:
                moment = kill_at(trial, child, root, old, rng)
            finally:
                child.kill()
            child.check_killed()
            where = (f"trial {trial}: killed {moment}, progress {child.progress()}, "
                     f"done={child.done()}, dirs {_proj_dirs(root)} (seed={seed})")
            print(where)
            _check_after_replay_kill(root, log, template, before, where)


def test_kill_during_replay_keeps_old_projections(tmp_path: Path, template: dict[str, Any]) -> None:
    """A replay killed at a random moment before its swap leaves the old projections readable and
    unchanged, and the next replay succeeds, removes the partial directory and rebuilds the same state."""
    head = template["head"]

    def kill_at(trial: int, child: _Child, root: Path, old: set[str], rng: random.Random) -> str:
        child.wait_for(lambda: bool(set(_proj_dirs(root)) - old), "creating its directory")
        anchor = "its directory appeared"
        if trial == 5:  # aim at the search indexing, which starts once the views caught up
            child.wait_for(lambda: head in child.progress(), "replaying the views")
            anchor = "its views caught up"
        delay = rng.uniform(0.0, 0.3)
        time.sleep(delay)
        return f"{delay * 1000:.0f} ms after {anchor}"

    _replay_kill_trials(tmp_path, template, 6, kill_at)


def _meta_page_gone(data_mdb: Path) -> bool:
    """Whether the wipe zeroed the LMDB meta page (its magic at offset 16) or removed the file."""
    try:
        with open(data_mdb, "rb") as f:
            return f.read(20)[16:20] in (b"", bytes(4))
    except FileNotFoundError:
        return True


def test_kill_while_replay_wipes_old_projections(tmp_path: Path, template: dict[str, Any]) -> None:
    """A replay killed after its swap, while it wipes the replaced directory, leaves a store whose
    next replay succeeds and leaves only the projections in use."""
    def kill_at(trial: int, child: _Child, root: Path, old: set[str], rng: random.Random) -> str:
        link = os.readlink(root / "proj")
        child.wait_for(lambda: os.readlink(root / "proj") != link, "swapping the link")
        anchor = "the swap"
        if trial == 0:  # once the old views file is being zero-filled
            data_mdb = root / link / "views" / "data.mdb"
            child.wait_for(lambda: child.done() or _meta_page_gone(data_mdb), "wiping the old views")
            anchor = "the old views' meta page was zeroed"
        delay = rng.uniform(0.0, 0.02)
        time.sleep(delay)
        return f"{delay * 1000:.0f} ms after {anchor}"

    _replay_kill_trials(tmp_path, template, 2, kill_at)


# -- kill during a live catch-up -----------------------------------------------

def _kill_catch_up(root: Path, head: int, rng: random.Random, after_views: bool) -> str:
    """Start a catch-up and kill it 50-500 ms after it started (or caught up the views)."""
    child = _Child("catch-up", root)
    try:
        child.wait_for(lambda: bool(child.lines), "starting")
        anchor = "start"
        if after_views and int(child.lines[0][2]) < head:
            child.wait_for(lambda: head in child.progress(), "catching up the views")
            anchor = "views caught up"
        delay = rng.uniform(0.05, 0.5)
        time.sleep(delay)
    finally:
        child.kill()
    child.check_killed()
    return (f"{delay * 1000:.0f} ms after {anchor} (start {child.lines[0][1:]}, "
            f"progress {child.progress()}, done={child.done()})")


def test_kill_during_catch_up_then_catch_up_equals_replay(tmp_path: Path,
                                                          template: dict[str, Any]) -> None:
    """A catch-up of 60k events killed at a random moment (once or twice in a row) leaves
    projections that, caught up again, equal a full replay of the log."""
    seed = _seed()
    rng = random.Random(seed)
    head = template["head"]
    for trial in range(6):
        root = _copy(template, tmp_path / f"store-{trial}")
        crashes = 2 if trial % 3 == 2 else 1
        moments = []
        for _ in range(crashes):
            # Odd trials aim at the search indexing, which starts once the views caught up.
            moments.append(_kill_catch_up(root, head, rng, after_views=trial % 2 == 1))
        where = f"trial {trial}: killed {moments} (seed={seed})"
        print(where)
        with EventLog.open(root / "log") as log:
            proj = Projections(root, log, shards=SHARDS)
            try:
                assert proj.catch_up(search=True) == head, where
                assert snapshot(proj) == template["replayed"], f"catch-up after a kill: {where}"
            finally:
                proj.close()
        shutil.rmtree(root)


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])
