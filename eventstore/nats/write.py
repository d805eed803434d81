"""The append path of the NATS log.

1. A retry whose event ids the client's index already holds returns the
   original result; nothing is published.
2. Publish the payloads (pipelined, ``Nats-Msg-Id: p.<event id>.<attempt>``:
   a request retried after a timeout is stored once; a new attempt stores a
   new copy, never pointing at a copy an earlier attempt may have erased),
   while the index catches up (the two overlap: one round trip less). A
   client whose last append committed at its first attempt (no other writer
   came between) skips that catch-up: the commit's compare-and-set on the last
   chunk (step 3) proves the index was current, and fails (step 4) when it was
   not. Then check every request against the index: a retry found now returns
   the original result and its new copies are erased; a stale expected version
   raises and the append's payloads are erased. Payloads are orphans until a
   chunk names them. A failed append erases its own only when its commit
   certainly did not land; otherwise the purge's orphan sweep (which checks
   that no chunk names them) does.
3. Publish the chunks and the stream markers as one atomic batch. The first
   chunk expects the last chunk the index has seen
   (``Nats-Expected-Last-Subject-Sequence`` on ``<name>.h``): a compare-and-set
   on the whole log, so seqs stay gapless and the chain has one order every
   host agrees on. Each marker expects its stream's last marker, so JetStream
   itself enforces the per-stream expected version.
4. When another writer won (wrong last sequence), a duplicate message id, or an
   unknown outcome (a timeout): catch up (at least to the last chunk the server
   named), look again (our ids may have landed) and rebuild the batch on the
   new head, after a short random pause (no exponential backoff: a loser that
   sleeps long loses again, and starves).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import time
import uuid
from collections.abc import Sequence
from hashlib import sha256
from typing import Any

from ..backend import PreparedAppend
from ..chain import SALT_SIZE, new_salts
from ..codec import encode_header_fields
from ..envelope import AppendResult
from ..errors import ConcurrencyError, DuplicateEventError, InvalidEventError, InvalidInputError
from .client import NatsApiError, NatsUnavailableError, api_reply, clear_error, is_transient
from .records import CHUNK_BYTES, CHUNK_EVENTS, Chunk, Index, Record, decode_chunk, encode_chunk, header_of
from .store import Store

__all__ = ["append"]

# Answers that say the batch did not commit and should be built again on the new head:
# wrong last sequence (another writer won), a duplicate message id (ours landed
# earlier), an incomplete batch (a message of it was lost on the way).
_REBUILD = {10071, 10164, 10201, 10175, 10176}
_MAX_BATCH = 1000
_PIPELINE = 256
# An append gives up this long after its payloads were published, well within the
# purge's orphan age (erase.ORPHAN_AGE = 300 s), so the sweep never takes a payload
# that a commit still in flight will name.
COMMIT_DEADLINE = 120.0
_LAST = re.compile(r"wrong last sequence: (\d+)")


class _Plan:
    """The requests still to write, with their payload messages."""

    def __init__(self, batch: Sequence[PreparedAppend]) -> None:
        self.batch = batch
        self.results: list[AppendResult | None] = [None] * len(batch)
        self.stored: list[list[int]] = [[] for _ in batch]  # payload stream seqs
        self.fresh: list[int] = []  # payload messages this append created (not deduplicated)
        self.fresh_of: list[list[int]] = [[] for _ in batch]  # the same, per request
        self.payloads: dict[int, bytes] = {}  # stream seq -> salt || payload
        self.nonce = uuid.uuid4().hex[:12]  # this attempt's payload message ids
        self.uncertain = False  # a commit may have landed: never erase ``fresh`` then


def append(store: Store, batch: Sequence[PreparedAppend], clock: Any) -> list[AppendResult]:
    """Append every request of ``batch`` atomically (see the module docstring)."""
    with store.lock:
        plan = _Plan(batch)
        for i, req in enumerate(batch):  # retries the index already knows: nothing to publish
            if req.client_ids:
                plan.results[i] = _previous(store.index, req, duplicate=True)
        if all(r is not None for r in plan.results):
            return [r for r in plan.results if r is not None]
        try:
            caught_up = store.contended
            _store_payloads(store, plan)  # beside the catch-up: one round trip less
            _check_current(store, plan, caught_up)
            _drop_resolved(store, plan)
            if all(r is not None for r in plan.results):
                return [r for r in plan.results if r is not None]
            return _commit(store, plan, clock)
        except BaseException:
            if not plan.uncertain:
                _erase_fresh(store, plan)
            raise


def _check_current(store: Store, plan: _Plan, caught_up: bool) -> None:
    """:func:`_check` before the commit; a refusal by an index that did not
    catch up first is looked at again once it has (it may only be stale)."""
    try:
        _check(store.index, plan, landed=False)
    except (ConcurrencyError, InvalidEventError):
        if caught_up:
            raise
        store.contended = True
        _check(store.catch_up(), plan, landed=False)


def _check(index: Index, plan: _Plan, *, landed: bool) -> None:
    """Find retries (and, after an unknown outcome, our own landed appends) and
    check expected versions and erased seqs against ``index``."""
    versions: dict[str, int] = {}
    for i, req in enumerate(plan.batch):
        if plan.results[i] is not None:
            continue
        previous = _previous(index, req, duplicate=not landed) if req.client_ids or landed else None
        if previous is not None:
            plan.results[i] = previous
            continue
        current = versions.get(req.stream, index.version(req.stream))
        if req.expected_version is not None and req.expected_version != current:
            raise ConcurrencyError(f"stream {req.stream} is at version {current}, expected "
                                   f"{req.expected_version}", stream=req.stream,
                                   expected=req.expected_version, actual=current)
        for seq in req.erases:
            if seq < 1 or seq > index.seq:
                raise InvalidEventError(f"cannot erase seq {seq}: the log head is {index.seq}")
        versions[req.stream] = current + len(req.payloads)


def _previous(index: Index, req: PreparedAppend, *, duplicate: bool) -> AppendResult | None:
    """The result of an earlier append of the same event ids, if any."""
    found = [index.ids.get(eid) for eid in req.event_ids]
    if all(f is None for f in found):
        return None
    seqs = [f for f in found if f is not None]
    if len(seqs) != len(found) or seqs != list(range(seqs[0], seqs[0] + len(seqs))):
        raise DuplicateEventError(
            f"event ids of this append were used by another append (first at seq {seqs[0]})")
    stream_seqs = index.streams.get(req.stream, [])
    if seqs[0] not in stream_seqs:
        raise DuplicateEventError(f"event id {req.event_ids[0]} was used for a different event "
                                  f"(seq {seqs[0]})")
    version = stream_seqs.index(seqs[-1]) + 1
    pos = index.locate(seqs[0])[0]
    return AppendResult(stream=req.stream, first_seq=seqs[0], last_seq=seqs[-1], version=version,
                        event_ids=req.event_ids, recorded_at=index.times[pos], duplicate=duplicate)


def _store_payloads(store: Store, plan: _Plan) -> None:
    """Publish every new payload (salted) and note where each one went."""
    jobs: list[tuple[int, bytes, str]] = []
    for i, req in enumerate(plan.batch):
        if plan.results[i] is None:
            salts = new_salts(len(req.payloads))
            for k, payload in enumerate(req.payloads):
                jobs.append((i, salts[k * SALT_SIZE:(k + 1) * SALT_SIZE] + payload, req.event_ids[k]))

    async def publish_all() -> list[dict[str, Any]]:
        acks: list[dict[str, Any]] = []
        for start in range(0, len(jobs), _PIPELINE):
            acks += await asyncio.gather(*(
                store.client.publish(store.p_subject, data, {"Nats-Msg-Id": f"p.{eid}.{plan.nonce}"})
                for _, data, eid in jobs[start:start + _PIPELINE]))
        return acks

    future = store.client.submit(publish_all())
    failed: BaseException | None = None
    try:
        if store.contended:
            store.catch_up()  # meanwhile: the id check and the versions need the head
    except BaseException as exc:  # raised once the payloads are noted (so a failure erases them)
        failed = exc
    acks = store.client.wait(future, timeout=store.client.timeout * (1 + len(jobs) // 1000))
    _note(plan, jobs, acks)
    if failed is not None:
        raise failed


def _note(plan: _Plan, jobs: list[tuple[int, bytes, str]], acks: list[dict[str, Any]]) -> None:
    """Where each payload went, and which ones this append created."""
    for (i, _, _), ack in zip(jobs, acks, strict=True):
        plan.stored[i].append(int(ack["seq"]))
        if not ack.get("duplicate"):
            plan.fresh.append(int(ack["seq"]))
            plan.fresh_of[i].append(int(ack["seq"]))
    for (_, data, _), ack in zip(jobs, acks, strict=True):
        plan.payloads[int(ack["seq"])] = data


def _commit(store: Store, plan: _Plan, clock: Any) -> list[AppendResult]:
    """Publish the chunks and markers until they land (or a check fails)."""
    attempt, deadline = 0, time.monotonic() + min(max(30.0, store.client.timeout), COMMIT_DEADLINE)
    while True:
        messages, results = _build(store, store.index, plan, clock)
        seen = 0  # the last chunk the server says it has (wrong last sequence)
        try:
            ack = store.client.run(_publish_batch(store, messages))
        except NatsApiError as exc:
            if exc.err_code not in _REBUILD:
                raise
            store.contended = True  # another writer came between: catch up before the next append
            found = _LAST.search(exc.description)
            seen = int(found.group(1)) if found else 0
        except NatsUnavailableError:
            plan.uncertain = True  # the outcome is unknown: it may have landed
            if time.monotonic() > deadline:
                raise
        else:
            store.contended = attempt > 0
            plan.uncertain = True
            plan.fresh.clear()  # committed: these payloads are named now
            _take_in(store, messages, ack)
            for i, result in results.items():
                plan.results[i] = result
            return [r for r in plan.results if r is not None]
        # Only a batch whose outcome was unknown may have landed; after a
        # refusal, ids found now are another client's commit (a duplicate).
        _check(_catch_up_to(store, seen), plan, landed=plan.uncertain)
        if all(r is not None for r in plan.results):  # our batch landed after all
            plan.fresh.clear()
            return [r for r in plan.results if r is not None]
        if time.monotonic() > deadline:
            raise ConcurrencyError("the log kept moving: the append lost the race to other writers "
                                   "until its deadline", stream=plan.batch[0].stream)
        attempt += 1
        time.sleep(random.uniform(0, min(0.02, 0.001 * attempt)))


def _take_in(store: Store, messages: list[tuple[str, bytes, dict[str, str]]], ack: dict[str, Any]) -> None:
    """Index the chunks just committed from the ack, without asking the server:
    an atomic batch is stored as consecutive messages ending at ``ack.seq``, and
    the compare-and-set on the first chunk says nothing came between the index's
    last chunk and it. Anything unexpected: catch up instead."""
    count, last = ack.get("count"), ack.get("seq")
    first = int(last) - len(messages) + 1 if isinstance(last, int) else 0
    if count != len(messages) or first <= store.index.last_chunk:
        store.catch_up()
        return
    chunks = [(first + n, decode_chunk(data, first + n)) for n, (subject, data, _) in enumerate(messages)
              if subject == store.h_subject]
    if chunks[0][1].first != store.index.seq + 1:
        store.catch_up()
        return
    for stream_seq, chunk in chunks:
        store.add(stream_seq, chunk)


def _catch_up_to(store: Store, last_chunk: int) -> Index:
    """Catch up until the index holds the chunk at stream seq ``last_chunk``
    (a replica that answers direct gets may lag the leader by a moment)."""
    index = store.catch_up()
    deadline = time.monotonic() + 2.0
    while index.last_chunk < last_chunk and time.monotonic() < deadline:
        time.sleep(0.002)
        index = store.catch_up()
    return index


def _build(store: Store, index: Index, plan: _Plan,
           clock: Any) -> tuple[list[tuple[str, bytes, dict[str, str]]], dict[int, AppendResult]]:
    """The batch's messages on the current head: chunks, then markers."""
    now = max(clock(), index.time)
    seq, link = index.seq, index.hash
    records: list[Record] = []
    results: dict[int, AppendResult] = {}
    versions: dict[str, int] = {}
    payloads = plan.payloads
    for i, req in enumerate(plan.batch):
        if plan.results[i] is not None:
            continue
        version = versions.get(req.stream, index.version(req.stream))
        first = seq + 1
        for k, stored_seq in enumerate(plan.stored[i]):
            seq += 1
            header = encode_header_fields((
                seq, req.stream, version + 1 + k, req.event_ids[k], req.types[k], now, req.actor,
                req.causation_id, req.correlation_id, req.schema_versions[k],
                tuple(req.erases) if k == 0 else ()))
            commitment = sha256(payloads[stored_seq]).digest()
            link = sha256(link + header + commitment).digest()
            records.append(Record(link, commitment, header, stored_seq))
        versions[req.stream] = version + len(req.payloads)
        results[i] = AppendResult(stream=req.stream, first_seq=first, last_seq=seq,
                                  version=versions[req.stream], event_ids=req.event_ids, recorded_at=now)
    return _messages(store, index, records, versions), results


def _messages(store: Store, index: Index, records: list[Record],
              versions: dict[str, int]) -> list[tuple[str, bytes, dict[str, str]]]:
    """Split ``records`` into chunks and add the markers."""
    groups: list[list[Record]] = [[]]
    size = 0
    for record in records:
        if len(groups[-1]) >= CHUNK_EVENTS or size + len(record.header) + 100 > CHUNK_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(record)
        size += len(record.header) + 100
    if len(groups) + len(versions) > _MAX_BATCH:
        raise InvalidInputError(f"an append of {len(records)} events over {len(versions)} streams is "
                                "too large for one NATS atomic batch")
    marks = tuple(versions.items())
    messages = []
    first = index.seq + 1
    for n, group in enumerate(groups):
        chunk = Chunk(first, tuple(group), len(groups), marks) if n == 0 else Chunk(first, tuple(group), 0)
        headers = {"Nats-Msg-Id": f"h.{header_of(group[0], first).id}"}
        if n == 0:
            headers["Nats-Expected-Last-Subject-Sequence"] = str(index.last_chunk)
        messages.append((store.h_subject, encode_chunk(chunk), headers))
        first += len(group)
    for stream, version in marks:
        messages.append((store.marker_subject(stream), str(version).encode(),
                         {"Nats-Expected-Last-Subject-Sequence": str(index.marks.get(stream, 0))}))
    return messages


async def _publish_batch(store: Store, messages: list[tuple[str, bytes, dict[str, str]]]) -> dict[str, Any]:
    """Publish ``messages`` as one atomic batch; the last one commits it."""
    batch_id = uuid.uuid4().hex
    nc = store.client.nc
    subject, data, headers = messages[-1]
    final = {**headers, "Nats-Batch-Id": batch_id, "Nats-Batch-Sequence": str(len(messages)),
             "Nats-Batch-Commit": "1"}
    try:
        for n, (subj, body, head) in enumerate(messages[:-1], 1):
            await nc.publish(subj, body, headers={**head, "Nats-Batch-Id": batch_id,
                                                  "Nats-Batch-Sequence": str(n)})
        return api_reply(await nc.request(subject, data, timeout=store.client.attempt_timeout, headers=final))
    except Exception as exc:  # a "retry" answer, or none: the caller looks at the log again
        if isinstance(exc, NatsApiError) and not is_transient(exc):
            raise clear_error(exc) from None
        raise NatsUnavailableError(f"the commit of an append got no answer ({type(exc).__name__})") from None


def _drop_resolved(store: Store, plan: _Plan) -> None:
    """Erase the payloads published for requests the caught-up index showed
    to be retries of committed appends (nothing of them is committed again)."""
    drop = {seq for i, result in enumerate(plan.results) if result is not None for seq in plan.fresh_of[i]}
    if drop:
        plan.fresh = [seq for seq in plan.fresh if seq not in drop]
        _erase_fresh(store, plan, sorted(drop))


def _erase_fresh(store: Store, plan: _Plan, seqs: list[int] | None = None) -> None:
    """Erase the payload messages a failed append published (best effort)."""
    seqs = plan.fresh if seqs is None else seqs
    if not seqs:
        return
    from .erase import delete_payloads

    with contextlib.suppress(Exception):  # the purge erases orphans a failure leaves behind
        delete_payloads(store, seqs)
