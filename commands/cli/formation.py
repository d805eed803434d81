"""CLI command of memory that forms itself: ``memlog extract``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .base import Context, pass_context

if TYPE_CHECKING:
    from ..app.upkeep.extraction import ExtractionReport

__all__ = ["extract"]


def _text(report: ExtractionReport) -> str:
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(report.skipped.items()))
    tail = f" (skipped: {skipped})" if skipped else ""
    if report.dry_run:
        lines = [f"{report.session_id}: would extract {len(report.decisions)} decisions and "
                 f"{len(report.lessons)} lessons from {report.messages} new messages (dry run){tail}"]
        lines += [f"  decision from {mid}" for mid in report.decisions]
        lines += [f"  lesson from {mid}" for mid in report.lessons]
        return "\n".join(lines)
    if not report.messages:
        return f"{report.session_id}: no message since the last extraction"
    return (f"{report.session_id}: {len(report.decisions)} decisions, {len(report.lessons)} lessons from "
            f"{report.messages} messages (seq {report.seq}){tail}\n"
            + "\n".join(f"  {i}" for i in (*report.decisions, *report.lessons)))


@click.command()
@click.option("--session", "session_id", required=True, help="The session to extract from.")
@click.option("--dry-run", is_flag=True, help="List what would be extracted (by message id); write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (as the global --json).")
@pass_context
def extract(ctx: Context, session_id: str, dry_run: bool, as_json: bool) -> None:
    """Extract decisions and lessons from a session's messages (seed 002's rules),
    once: a second run reads only the messages recorded since."""
    ctx.json = ctx.json or as_json
    with ctx.reading() if dry_run else ctx.memory(create=False) as mem:
        report = mem.extract(session_id, dry_run=dry_run)
    ctx.emit(report.to_dict(), _text(report))
