"""``memlog maintain``: every due piece of upkeep, once, and the shape every step shares.

A :class:`Step` first says what is due (:attr:`Step.due`, a read of the
views, cheap), then does one :class:`Due` at a time (:attr:`Step.run`). A
:class:`Due` names ids, counts and a reason, never content: it is printed,
logged and returned as JSON.

A run asks each :class:`Step` what is due (reads of the
views only), then does each due item in turn, writing events with the actor
``memlog/maintain`` and the item's reason. The steps run in this order, each
seeing what the ones before it wrote:

1. extraction of closed sessions not yet extracted;
2. compaction of sessions at ``compact_at`` of their size limit;
3. memory resources: TTL evictions and flushes a resource is due;
4. retention by days (entries older than their kind's ``retention_days``);
5. retention by count (the oldest lessons past ``lesson_limit`` per scope);
6. ephemeral sessions past their age or count;
7. sessions idle ``archive_idle_days`` or more are archived.

(Before them, this host's purge of a shared log's deletions; after them, the
search refit: :func:`commands.app.upkeep.steps.default_steps`.)
:mod:`commands.app.upkeep.loop` runs this on a schedule.

**One at a time.** A run holds an exclusive lock on ``<dir>/maintain.lock``
(``flock``, released by the kernel if the process dies); a second run, from
cron or by hand, does not wait: it raises
:class:`~eventstore.LockTimeoutError` (``E_LOCK_TIMEOUT``, exit 5) and does
nothing. Every write still goes through the log with expected versions, so a
run and ordinary writers in other processes interleave safely.

**Dry run.** Only the ``due`` half runs: the report lists what would be done,
nothing is written and no lock is taken, so the log's head is unchanged.

**Failures.** An item that fails (a race lost five times, a session deleted
meanwhile) is reported with its error code and the run goes on; so is a step
whose ``due`` fails (listed as ``step: E_CODE``, such as a ``retention_days``
value out of range); the report counts it and the CLI exits 1. The report
holds ids, counts and reasons, never content.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

import msgspec

from eventstore import LockTimeoutError, MemlogError, now_micros

from .. import log as _log
from ..store.store import Store
from .summariser import Summariser

__all__ = ["LOCK_NAME", "MAINTAIN_ACTOR", "Due", "MaintainReport", "Progress", "Step", "StepContext",
           "StepReport", "maintain", "run_lock"]

# The actor of every event a maintenance run writes (extracted entries keep
# their own, ``memlog/extract``).
MAINTAIN_ACTOR = "memlog/maintain"


class Due(msgspec.Struct, frozen=True):
    """One piece of work a step would do: ``target`` is an id (a session, an
    entry, a scope such as ``user:alice``, an entry kind), ``items`` how many
    entries or events it touches, ``reason`` why it is due (ids and figures
    only), ``ids`` the entries it takes when the step names them (retention)."""

    step: str
    target: str
    reason: str
    items: int = 1
    ids: list[str] = []


@dataclass(frozen=True)
class StepContext:
    """What a step's ``run`` is given: the actor to write as, the run's clock
    (microseconds since the epoch, UTC) and the store's summariser."""

    actor: str
    now: int
    summariser: Summariser


@dataclass(frozen=True)
class Step:
    """A maintenance step: ``due(store, now)`` lists its work (reads only);
    ``run(store, due, context)`` does one item and returns how many events it wrote.
    ``run_all``, when given, does every due item at once instead (one deletion,
    so one purge, for many items)."""

    name: str
    due: Callable[[Store, int], list[Due]]
    run: Callable[[Store, Due, StepContext], int]
    run_all: Callable[[Store, list[Due], StepContext], int] | None = None


LOCK_NAME = "maintain.lock"

# (step name, items done, items due in the step) after each item; the CLI draws a bar.
Progress = Callable[[str, int, int], None]


class StepReport(msgspec.Struct, frozen=True):
    """One step of a run: what was due, how many events it wrote, what failed
    (``target: E_CODE``)."""

    name: str
    due: list[Due]
    events: int = 0
    failed: list[str] = []
    seconds: float = 0.0


class MaintainReport(msgspec.Struct, frozen=True):
    """A run: its steps in order, whether it was dry, when it ran and how long it took."""

    dry_run: bool
    at: int
    seconds: float
    steps: list[StepReport]

    @property
    def due(self) -> int:
        """How many items were due in all."""
        return sum(len(s.due) for s in self.steps)

    @property
    def failed(self) -> int:
        """How many items failed."""
        return sum(len(s.failed) for s in self.steps)


@contextmanager
def run_lock(store: Store) -> Iterator[None]:
    """Hold ``<dir>/maintain.lock`` for the run, or raise LockTimeoutError at once."""
    path = store.data_dir / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LockTimeoutError(
                "another memlog maintain is running on this store; this run did nothing "
                "(run it again when that one ends)") from None
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def maintain(store: Store, summariser: Summariser, steps: Sequence[Step], *, dry_run: bool = False,
             progress: Progress | None = None, now: int | None = None) -> MaintainReport:
    """Run every step's due work once (``dry_run``: only list it)."""
    started = time.perf_counter()
    at = now_micros() if now is None else now
    if dry_run:
        reports = [StepReport(step.name, due, failed=failed)
                   for step in steps for due, failed in [_due(store, step, at)]]
    else:
        store.check_writable("maintenance")
        with run_lock(store):
            reports = _run(store, summariser, steps, at, progress)
    report = MaintainReport(dry_run, at, round(time.perf_counter() - started, 6), reports)
    _log.info("maintain ran", dry_run=dry_run, due=report.due, failed=report.failed,
              seconds=report.seconds)
    return report


def _run(store: Store, summariser: Summariser, steps: Sequence[Step], at: int,
         progress: Progress | None) -> list[StepReport]:
    """Each step's due list, then its items in turn; later steps see earlier steps' writes."""
    context = StepContext(actor=MAINTAIN_ACTOR, now=at, summariser=summariser)
    return [_run_step(store, step, context, progress) for step in steps]


def _run_step(store: Store, step: Step, context: StepContext, progress: Progress | None) -> StepReport:
    """One step: its due list (now, after the steps before it), then its items
    one at a time, or all at once when the step has ``run_all``."""
    started = time.perf_counter()
    due, failed = _due(store, step, context.now)
    if due and step.run_all is not None:
        events, failed = _attempt(step, due, partial(step.run_all, store, due, context))
        if progress is not None:
            progress(step.name, len(due), len(due))
    else:
        events = 0
        for done, item in enumerate(due, 1):
            written, lost = _attempt(step, [item], partial(step.run, store, item, context))
            events, failed = events + written, failed + lost
            if progress is not None:
                progress(step.name, done, len(due))
    return StepReport(step.name, due, events, failed, round(time.perf_counter() - started, 6))


def _due(store: Store, step: Step, now: int) -> tuple[list[Due], list[str]]:
    """The step's due list, or none and the failure (``step: E_CODE``) when
    asking fails (a setting out of range): the steps after it still run."""
    try:
        return step.due(store, now), []
    except MemlogError as exc:
        _log.warning("maintain step failed", step=step.name, code=exc.code)
        return [], [f"{step.name}: {exc.code}"]


def _attempt(step: Step, items: list[Due], run: Callable[[], int]) -> tuple[int, list[str]]:
    """(events written, failures as ``target: E_CODE``) of one run of ``items``."""
    try:
        return run(), []
    except MemlogError as exc:
        for item in items:
            _log.warning("maintain item failed", step=step.name, target=item.target, code=exc.code)
        return 0, [f"{item.target}: {exc.code}" for item in items]
