"""CLI commands of a store's well-being: ``health`` and ``metrics``."""

from __future__ import annotations

import sys
from typing import Any

import click

from .base import Context, pass_context
from .render import field, fields

__all__ = ["health", "metrics"]


@click.command()
@click.option("--tail", type=click.IntRange(min=1), default=1000, show_default=True,
              help="How many of the last records to verify.")
@pass_context
def health(ctx: Context, tail: int) -> None:
    """Head, tail verify, projection lag, sizes, last purge/compaction/flush, pending work.

    Exits 1 when the status is ``failing`` (the tail does not verify)."""
    with ctx.reading() as mem:
        report = mem.health(tail)
    ctx.emit(report, lambda: _text(report))
    if report["status"] == "failing":
        sys.exit(1)


@click.command()
@pass_context
def metrics(ctx: Context) -> None:
    """Prometheus text format: counts, sizes, lag, and this process's latency histograms."""
    with ctx.reading() as mem:
        text = mem.metrics()
    click.echo(text, nl=False)


def _text(r: dict[str, Any]) -> str:
    head, tail, over, pending = r["head"], r["verify_tail"], r["sessions_over_limit"], r["pending_purges"]
    lag = ", ".join(f"{k} {'-' if v is None else v}" for k, v in r["lag"].items())
    sizes = ", ".join(f"{k} {v}" for k, v in r["bytes_on_disk"].items())
    last = ", ".join(f"{k} {'never' if v is None else '@' + str(v['seq']) + ' ' + v['at']}"
                     for k, v in r["last"].items())
    verdict = "ok" if tail["ok"] else f"FAILS at seq {tail['first_bad_seq']}: {field(tail['problem'])}"
    return "\n".join([
        f"status: {r['status']}",
        f"head: seq {head['seq']} at {head['recorded_at'] or '-'}",
        f"verify (last {tail['checked']} records): {verdict}",
        f"lag (events): {lag}",
        f"bytes on disk: {sizes}",
        f"last: {last}",
        f"pending purges: {pending['pending']} (running elsewhere: {pending['running']})",
        f"skipped events: {r['skipped_events']}",
        f"sessions over their limit: {over['count']}" + (f" ({fields(over['ids'])})" if over["ids"] else ""),
    ])
