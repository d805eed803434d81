"""``memlog maintain``: every due piece of upkeep, once (for cron)."""

from __future__ import annotations

import sys
from typing import Any

import click
import msgspec

from ..app.maintain import MaintainReport
from .base import Context, pass_context

__all__ = ["maintain"]

# A bar shows for a step with at least this many due items (click draws it on a terminal only).
_BAR_FROM = 20


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
        lines += [f"{step.name} {due.target}: {due.reason}" for due in step.due]
        if step.due:
            failed = f", {len(step.failed)} failed ({'; '.join(step.failed)})" if step.failed else ""
            written = "" if report.dry_run else f", {step.events} events"
            lines.append(f"  {step.name}: {verb} {len(step.due)} item(s){written}{failed}")
    lines.append(f"{'dry run' if report.dry_run else 'maintain'}: "
                 f"{report.due or 'nothing'} due, {report.seconds:.3f} s")
    return "\n".join(lines)


@click.command()
@click.option("--dry-run", is_flag=True, help="List what is due; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@pass_context
def maintain(ctx: Context, dry_run: bool, as_json: bool) -> None:
    """Run every due piece of upkeep once: extraction backlog, compaction, resource
    TTLs, retention by count, ephemeral and idle sessions. Safe from cron: a second
    run at the same time exits 5 (E_LOCK_TIMEOUT) and does nothing."""
    ctx.json = ctx.json or as_json
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
