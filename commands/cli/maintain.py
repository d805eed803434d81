"""``memlog maintain``: every due piece of upkeep, once (for cron), or on a
schedule in the foreground (``--every``, for a service manager or a container)."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

import click
import msgspec

from .base import Context, pass_context

if TYPE_CHECKING:
    from ..app.upkeep.loop import Maintainer, Run
    from ..app.upkeep.maintain import Due, MaintainReport

__all__ = ["maintain"]

# A bar shows for a step with at least this many due items (click draws it on a terminal only).
_BAR_FROM = 20
_IDS_SHOWN = 10  # the text names this many ids of a due item; --json lists them all


class _Bars:
    """One progress bar per long step, on stderr."""

    def __init__(self) -> None:
        self.step: str | None = None
        self.bar: Any = None

    def __call__(self, step: str, done: int, total: int) -> None:
        if total < _BAR_FROM:
            return
        if step != self.step:
            self.close()
            self.step, self.bar = step, click.progressbar(length=total, label=step, file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
        self.step, self.bar = None, None


def _text(report: MaintainReport) -> str:
    verb = "would do" if report.dry_run else "did"
    lines = []
    for step in report.steps:
        lines += [f"{step.name} {due.target}: {due.reason}{_ids(due)}" for due in step.due]
        if step.due or step.failed:
            failed = f", {len(step.failed)} failed ({'; '.join(step.failed)})" if step.failed else ""
            written = "" if report.dry_run else f", {step.events} events"
            lines.append(f"  {step.name}: {verb} {len(step.due)} item(s){written}{failed}")
    lines.append(f"{'dry run' if report.dry_run else 'maintain'}: "
                 f"{report.due or 'nothing'} due, {report.seconds:.3f} s")
    return "\n".join(lines)


def _ids(due: Due) -> str:
    if not due.ids:
        return ""
    more = len(due.ids) - _IDS_SHOWN
    return f" ({', '.join(due.ids[:_IDS_SHOWN])}{f' and {more} more' if more > 0 else ''})"


@click.command()
@click.option("--dry-run", is_flag=True, help="List what is due; write nothing.")
@click.option("--every", metavar="DURATION",
              help="Run on a schedule (30s, 15m, 1h, 7d) in the foreground until SIGTERM or SIGINT.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout (one line per run).")
@pass_context
def maintain(ctx: Context, dry_run: bool, every: str | None, as_json: bool) -> None:
    """Run every due piece of upkeep once: extraction backlog, compaction, resource
    TTLs, retention by days and by count, ephemeral and idle sessions. Safe from
    cron: a second run at the same time exits 5 (E_LOCK_TIMEOUT) and does nothing.
    With --every, run it on a schedule until stopped (exit 0)."""
    ctx.json = ctx.json or as_json
    if every is not None:
        from ..app.upkeep.loop import parse_interval
        _every(ctx, parse_interval(every), dry_run)
        return
    bars = _Bars()
    try:
        with ctx.reading() if dry_run else ctx.memory(create=False) as mem:
            report = mem.maintain(dry_run=dry_run, progress=bars)
    finally:
        bars.close()
    data = {**msgspec.to_builtins(report), "due": report.due, "failed": report.failed}
    ctx.emit(data, lambda: _text(report))
    if report.failed:
        sys.exit(1)


def _every(ctx: Context, seconds: float, dry_run: bool) -> None:
    """The schedule in a worker thread; this (main) thread waits for it and turns
    the first SIGTERM or SIGINT into a stop after the current run."""
    from ..app.upkeep.loop import run_every
    stop, raised = threading.Event(), []

    def opener() -> AbstractContextManager[Maintainer]:
        return ctx.memory(create=False)

    def show(run: Run) -> None:
        ctx.emit(run.to_dict(), lambda: _run_text(run))

    def loop() -> None:
        try:
            run_every(opener, seconds, stop, on_run=show, dry_run=dry_run)
        except BaseException as exc:  # printing failed (a closed pipe): the main thread raises it
            raised.append(exc)

    worker = threading.Thread(target=loop, name="memlog-maintain-every", daemon=True)
    with _stopping(stop):
        worker.start()
        worker.join()
    if raised:
        raise raised[0]


def _run_text(run: Run) -> str:
    if run.report is None:
        error = run.error or {}
        return f"run {run.run}: failed: {error.get('message')} [{error.get('code')}]"
    *items, total = _text(run.report).split("\n")
    return "\n".join([*items, f"run {run.run}: {total}"])


@contextmanager
def _stopping(stop: threading.Event) -> Iterator[None]:
    """SIGTERM and SIGINT set ``stop``, every time (a supervisor or ``timeout``
    may send one twice); the handlers in force before come back at the end."""
    previous: dict[signal.Signals, Any] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    for number in (signal.SIGTERM, signal.SIGINT):
        previous[number] = signal.signal(number, handler)
    try:
        yield
    finally:
        for which, old in previous.items():
            signal.signal(which, old)
