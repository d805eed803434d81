"""CLI commands of the life cycle: compact (seed 000) and summarise (seed 001)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .base import Context, pass_context

if TYPE_CHECKING:
    from ..app.upkeep.compaction import CompactionReport

__all__ = ["compact", "summarise"]


def _line(report: CompactionReport) -> str:
    if report.compacted:
        return (f"{report.session_id}: {len(report.removed_ids)} entries folded into {report.summary_id}, "
                f"{report.bytes_before} -> {report.bytes_after} bytes (seq {report.seq})")
    if report.dry_run and report.removed_ids:
        return (f"{report.session_id}: would fold {len(report.removed_ids)} entries, "
                f"{report.bytes_before} -> about {report.bytes_after} bytes (dry run)")
    return f"{report.session_id}: nothing to compact ({report.bytes_before} bytes)"


@click.command()
@click.option("--session", "session_id", help="Compact this session now, whatever its size.")
@click.option("--dry-run", is_flag=True, help="Report what would go; write nothing.")
@pass_context
def compact(ctx: Context, session_id: str | None, dry_run: bool) -> None:
    """Compact sessions at 90% of their size limit (or one session now): keep the
    most relevant 80% of the bytes, fold the rest into a summary."""
    with ctx.reading() if dry_run else ctx.memory(create=False) as mem:
        reports = mem.compact(session_id, dry_run=dry_run)
        limit = mem.settings.session_limit_bytes
    data = {"sessions": [r.to_dict() for r in reports], "limit": limit}
    ctx.emit(data, lambda: "\n".join(_line(r) for r in reports) or "no session over its threshold")


@click.command()
@click.argument("session_id")
@click.option("--force", is_flag=True, help="Summarise whatever the session's tokens.")
@pass_context
def summarise(ctx: Context, session_id: str, force: bool) -> None:
    """Summarise a session's oldest messages past the token threshold, keeping the last ones."""
    with ctx.memory(create=False) as mem:
        report = mem.summarise(session_id, force=force)
    text = (f"{report.session_id}: {len(report.summarised_ids)} messages summarised into "
            f"{report.summary_id}, {report.tokens_before} -> {report.tokens_after} tokens (seq {report.seq})"
            if report.summarised else
            f"{report.session_id}: nothing to summarise ({report.tokens_before} tokens, "
            f"threshold {report.threshold})")
    ctx.emit(report.to_dict(), text)
