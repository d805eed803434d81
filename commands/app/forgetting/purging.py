"""The physical purge of a committed erase, its verification, and finishing
purges that a crash interrupted.

A purge (DESIGN section 5) rewrites the log's payload segments that held the
erased payloads, the views when memory values or session metadata went, and
every search shard that held an erased entry; then it verifies and records
``purge.completed``. Each step is idempotent and is journaled
(:mod:`commands.app.forgetting.journal`): a crash at any step is finished by the next
open of the store, by any process (:func:`finish_interrupted`), or by
``memlog purge``.

The verification is true:

- the deleted texts (needles, held in memory only) are looked for in every
  file that could hold them; a text still held by a live entry is no leak;
- so are their vectors, when an embedder is installed: each deleted text's
  vector, as the vector projection stores it (float16 bytes), is a needle too
  (a vector is derived content: it can leak the text); the vector files are
  rewritten by every purge;
- the erased payloads read back as erased;
- the record at the head seen before the purge is unchanged (other processes
  may append meanwhile: that is no failure);
- nothing an interrupted purge leaves is left: compacting copies, unlinked
  shard directories, replaced projection directories.

When needles are found, the purge runs once more over every shard and the
views and scans again; the record says what was found, where, and what was
done. A purge finished after a crash has no needles (the content is gone from
memory with the process that held it): its record lists the checks it made.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import msgspec

from eventstore import PurgeCompleted, PurgeReport, entry_texts
from eventstore.storage import crashpoint

from .. import log as _log
from ..recall.search import find, make_query
from ..results import DeletionReport
from ..store.store import Store
from ..store.writer import SYSTEM_STREAM
from .journal import Held, Journal, PurgeIntent
from .scan import purge_scope, scan_needles

_LABEL = re.compile(r"(nats|raft-log-bound):")  # what a shared log's purge reports
_STREAM_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,194}")  # an id a plain user stream could name

__all__ = ["finish_interrupted", "pending_purges", "purge", "purge_deferred"]


class _Pass(msgspec.Struct):
    """What one pass of the purge rewrote, and how long its parts took."""

    files: list[str] = msgspec.field(default_factory=list)
    log_s: float = 0.0
    views_s: float = 0.0
    search_s: float = 0.0


def purge(store: Store, report: DeletionReport, held: Held, needles: set[bytes],
          names: dict[bytes, bytes] | None = None) -> DeletionReport:
    """Purge what ``held``'s intent erased, verify, record ``purge.completed``
    and drop the intent; return the report with the purge's outcome.
    ``names``: an erased user's id as the scan looks for it (needle -> the
    id, :func:`.pseudonym.id_needles`), looked for in every file."""
    intent = held.intent
    started = time.perf_counter()
    before = _record_at_head(store)
    everything = intent.everything
    done = _one_pass(store, intent.entry_ids, intent.views or everything, every_shard=everything)
    scan_started = time.perf_counter()
    texts = {n: n for n in needles} | vector_needles(store, needles)
    found = _verify(store, done, texts, names or {})
    checks = _structure(store, intent, before)
    if names:
        checks.insert(0, _id_check(store, names, found.named))
    verified = not found.leaks and all(ok for _, ok in checks)
    checks_done = _checks_done(checks, len(needles), len(texts) - len(needles))
    files = _relative(store, done.files)
    total = time.perf_counter() - started
    record = PurgeCompleted(request_ids=intent.request_ids or (intent.event_id,), files_rewritten=files,
                            bytes_scanned=found.scanned, verified=verified, seconds=round(total, 6),
                            checks=checks_done, findings=found.findings, action=found.action)
    crashpoint("purge: record purge.completed")
    seq = store.log.append(SYSTEM_STREAM, [record], actor="purge").last_seq
    held.done()
    _log.info("purge completed", requests=len(record.request_ids), verified=verified, files=len(files))
    return msgspec.structs.replace(
        report, purged=True, pending=False, verified=verified, bytes_scanned=found.scanned,
        files_rewritten=files, seq=seq, checks=checks_done, findings=found.findings, action=found.action,
        seconds={"log_compact_s": round(done.log_s, 6), "views_compact_s": round(done.views_s, 6),
                 "index_rebuild_s": round(done.search_s, 6),
                 "verify_s": round(time.perf_counter() - scan_started, 6), "total_s": round(total, 6)})


class _Found(msgspec.Struct):
    """What the verification's scans found: the deleted texts and the id's forms still held."""

    scanned: int = 0
    leaks: set[bytes] = msgspec.field(default_factory=set)
    named: set[bytes] = msgspec.field(default_factory=set)
    findings: tuple[str, ...] = ()
    action: str | None = None


def _verify(store: Store, done: _Pass, texts: dict[bytes, bytes], names: dict[bytes, bytes]) -> _Found:
    """Scan for the deleted texts (in the files the purge could have left them
    in) and the erased id's forms (everywhere); when any is found, purge every
    shard and the views once more and scan for what was found."""
    found = _Found()
    scope = purge_scope(done.files)
    # each file is read once: those in the purge's scope for both, the rest for the id alone
    found.scanned, hits = _scan(store, {**texts, **names}, scope)
    more, found.named = _scan(store, names, lambda path: not scope(path))
    found.scanned += more
    found.leaks = hits - names.keys()
    found.named |= hits & names.keys()
    if not (found.leaks or found.named):
        return found
    found.findings = _where(store, found.leaks | found.named)
    _log.info("purge found deleted content; purging again", files=len(found.findings))
    again = _one_pass(store, (), True, every_shard=True)
    done.files += again.files
    more, found.leaks = _scan(store, {n: texts[n] for n in found.leaks}, None)
    found.scanned += more
    more, found.named = _scan(store, {n: names[n] for n in found.named}, None)
    found.scanned += more
    left = found.leaks or found.named
    found.action = "purged every shard and the views again: " + ("still found" if left else "clean")
    return found


def _id_check(store: Store, names: dict[bytes, bytes], named: set[bytes]) -> tuple[str, bool]:
    """The check of the erased id's scan; when found, whether the headers of
    a user stream named by the plain id (a store written before pseudonyms)
    explain it: the chain keeps them."""
    if not named:
        return "scan for the erased user's id: found nowhere", True
    ids = {names[n].decode() for n in named}
    if any(store.log.stream_version(f"user:{uid}") for uid in ids if _STREAM_SAFE.fullmatch(uid)):
        return ("scan for the erased user's id: found, in the headers of a user stream written "
                "before pseudonyms (the chain keeps them)"), False
    return "scan for the erased user's id: found", False


def _checks_done(checks: list[tuple[str, bool]], texts: int, vectors: int) -> tuple[str, ...]:
    """The checks made, as the record lists them (failed ones marked)."""
    done = tuple(name if ok else f"FAILED: {name}" for name, ok in checks)
    if not texts:
        return done
    also = f" and {vectors} of their vectors" if vectors else ""
    return (f"scan for {texts} deleted texts{also}", *done)


def _one_pass(store: Store, entry_ids: Iterable[str], views: bool, every_shard: bool = False) -> _Pass:
    """The projections' purge (their catch-up, the views' copy, the shard
    rebuild, the vectors' copy), and the log's (compacting copies of the dirty
    segments; LMDB releases the GIL) beside it once the shard rebuild has read
    the log: the log's purge holds the log exclusive, so reads wait for it."""
    with ThreadPoolExecutor(1, thread_name_prefix="memlog-purge") as pool:
        jobs: list[Future[tuple[PurgeReport, float]]] = []

        def start_log_purge() -> None:  # once the shard rebuild read what it reads from the log
            jobs.append(pool.submit(_timed_log_purge, store))

        try:
            split = store.proj.purge(entry_ids, store.log.settings.purge_lock_timeout, views=views,
                                     every_shard=every_shard, reads_done=start_log_purge)
        finally:
            if not jobs:  # no shard was rebuilt, or the projections' purge failed first
                start_log_purge()
        log_report, log_s = jobs[0].result()
    return _Pass([*log_report.files_rewritten, *split.files_rewritten], log_s, split.views_seconds,
                 split.search_seconds)


def _timed_log_purge(store: Store) -> tuple[PurgeReport, float]:
    started = time.perf_counter()
    report = store.log.purge()
    return report, time.perf_counter() - started


def vector_needles(store: Store, needles: Iterable[bytes]) -> dict[bytes, bytes]:
    """Each deleted text's vector as the vector projection stores it (float16
    bytes) -> the text; none without an embedder. A zero vector (a text the
    model has no token for) is no needle: zeroed pages are everywhere."""
    embedder = store.proj.embedder
    texts = sorted(needles)
    if embedder is None or not texts:
        return {}
    vectors = embedder.embed([t.decode(errors="ignore") for t in texts])
    return {bytes(v.astype("<f2").tobytes()): t for v, t in zip(vectors, texts, strict=True) if v.any()}


def _scan(store: Store, needles: dict[bytes, bytes], scope: object) -> tuple[int, set[bytes]]:
    """Bytes scanned and the needles found whose text (``needles[n]``) no live
    entry holds."""
    if not needles:
        return 0, set()
    _, scanned, found = scan_needles(store.data_dir, needles, scope)  # type: ignore[arg-type]
    return scanned, {n for n in found if not _held_by_live_entry(store, needles[n])}


def _where(store: Store, leaks: set[bytes]) -> tuple[str, ...]:
    files, _, _ = scan_needles(store.data_dir, leaks)
    return tuple(f"{path}: {hits} hits" for path, hits in sorted(files.items()))


def _held_by_live_entry(store: Store, needle: bytes) -> bool:
    """True when a live entry legitimately holds the same text (not a leak)."""
    text = needle.decode(errors="ignore")
    hits = find(store, make_query(" ".join(text.split()[:12]), limit=50))
    with store.read() as views:
        entries = views.entries(h.id for h in hits)
    return any(view is not None and view.entry is not None
               and any(text in t for t in entry_texts(view.entry)) for view in entries)


def _record_at_head(store: Store) -> tuple[int, bytes]:
    head = store.log.head().seq
    return head, (store.log.chain_at(head) if head else b"")


def _structure(store: Store, intent: PurgeIntent, before: tuple[int, bytes]) -> list[tuple[str, bool]]:
    """The checks that need no content: erased payloads, the chain, leftovers."""
    seq, link = before
    erased = all(store.log.get(s).event is None for s in intent.erased_seqs)
    chain = seq == 0 or store.log.chain_at(seq) == link
    left = leftovers(store.data_dir, store.proj.root.name)
    return [(f"{len(intent.erased_seqs)} erased payloads read back erased", erased),
            (f"the chain to seq {seq} (the head before the purge) is unchanged", chain),
            ("nothing an interrupted purge leaves is left" + (f" ({', '.join(left)})" if left else ""),
             not left)]


def leftovers(data_dir: Path, current: str) -> list[str]:
    """What interrupted purges or rebuilds left under ``data_dir`` (paths
    relative to it): compacting copies, shard directories no link points at,
    projection directories not in use, temporary links and intents."""
    found = [p for p in data_dir.glob("log/**/.compact-*")]
    found += [p for p in data_dir.glob("proj-*") if p.is_dir() and p.name != current]
    found += list(data_dir.glob(".proj-link-*")) + list(data_dir.glob("purges/.*.tmp"))
    search = data_dir / current / "search"
    linked = {os.readlink(p) for p in search.glob("shard-??") if p.is_symlink()}
    found += [p for p in search.glob("shard-??.*") if not p.is_symlink() and p.name not in linked]
    found += list(search.glob(".shard-*"))
    envs = ("views", "vectors", "vectors/part-*")  # the vectors' partitions too
    found += [p for env in envs for p in (data_dir / current).glob(f"{env}/.compact-*")]
    return sorted(str(p.relative_to(data_dir)) for p in found)


def _relative(store: Store, paths: Iterable[str]) -> tuple[str, ...]:
    root = os.path.abspath(store.data_dir)
    # A shared log (nats://) reports labels, not files: nats:<stream>@<server>, raft-log-bound:<s>.
    return tuple(f if _LABEL.match(f) else os.path.relpath(os.path.abspath(f), root) for f in paths)


def finish_interrupted(store: Store, *, deferred: bool = False) -> list[DeletionReport]:
    """Finish every purge whose process died (and, with ``deferred``, every
    deferred one): the next open of a store calls this before any other work."""
    reports = []
    for held in Journal(store.data_dir).unheld():
        intent = held.intent
        seq = store.log.seq_of(intent.event_id)
        if seq is None or _completed(store, intent, seq):  # the erase never committed: nothing was deleted
            held.done()
        elif intent.deferred and not deferred:
            held.release()
        else:
            report = DeletionReport(request_id=intent.request_ids[0] if intent.request_ids
                                    else intent.event_id, deleted=len(intent.entry_ids),
                                    ids=intent.entry_ids, purged=False, seq=seq or 0,
                                    erased_seqs=intent.erased_seqs, pending=True)
            _log.info("finishing an interrupted purge", event_id=intent.event_id)
            reports.append(purge(store, report, held, set()))
    return reports


def _completed(store: Store, intent: PurgeIntent, seq: int) -> bool:
    ids = set(intent.request_ids) | {intent.event_id}
    return any(isinstance(rec.event, PurgeCompleted) and ids & set(rec.event.request_ids)
               for rec in store.log.read(seq + 1))


def purge_deferred(store: Store) -> DeletionReport | None:
    """Run every pending purge now: deferred ones, interrupted ones, and
    deletions the ledger shows unpurged without an intent (a store written
    before the journal)."""
    store.check_writable("a purge")
    reports = finish_interrupted(store, deferred=True)
    with store.read() as views:
        ledger = [d for d in views.deletions() if d.deleted_seq is not None and d.purge_seq is None]
    if ledger:
        ids = tuple(i for d in ledger for i in d.entry_ids)
        intent = PurgeIntent(event_id=f"ledger-{ledger[-1].request_id}",
                             request_ids=tuple(d.request_id for d in ledger), entry_ids=ids,
                             views=any(k in ("memory", "session") for d in ledger for k in d.counts_by_kind),
                             erased_seqs=tuple(sorted({s for d in ledger for s in d.erased_seqs})))
        report = DeletionReport(request_id=ledger[-1].request_id, deleted=len(ids), ids=ids, purged=False,
                                seq=store.log.head().seq, erased_seqs=intent.erased_seqs, pending=True)
        reports.append(purge(store, report, Journal(store.data_dir).write(intent), set()))
    return reports[-1] if reports else None


def pending_purges(store: Store) -> dict[str, int]:
    """How many purges wait (deferred) and how many run in another process."""
    journal = Journal(store.data_dir)
    waiting = 0
    for held in journal.unheld():
        waiting += 1
        held.release()
    return {"pending": waiting, "running": journal.running()}
