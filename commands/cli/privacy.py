"""CLI commands that forget: delete, redact, retention, purge."""

from __future__ import annotations

import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

import click
import msgspec

from eventstore import AbortedError, InvalidInputError, PurgeUnverifiedError

from .base import KINDS, PATTERN, Context, pass_context

if TYPE_CHECKING:
    from ..app import DeletionReport

__all__ = ["delete", "purge", "redact", "retention"]


def _report(ctx: Context, report: DeletionReport | None, what: str) -> None:
    if report is None:
        ctx.emit({"request_id": None, "deleted": 0, "ids": [], "purged": False, "seq": None},
                 f"{what}: nothing to do")
        return
    data = msgspec.to_builtins(report)
    state = ("purged and verified" if report.verified else "purged, VERIFICATION FAILED") \
        if report.purged else "tombstoned; purge pending (run memlog purge)"
    ctx.emit(data, f"{what} {report.request_id}: {report.deleted} item(s), {state} (seq {report.seq})")
    if report.purged and not report.verified:
        raise PurgeUnverifiedError(f"the purge of {report.request_id} is not verified: "
                                   f"{'; '.join(report.findings or report.checks)}")


def _confirm(yes: bool, question: str) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise InvalidInputError("refusing to delete without --yes when stdin is not a terminal")
    if not click.confirm(question, default=False, err=True):
        raise AbortedError("deletion cancelled; nothing was written")


@click.command()
@click.option("--id", "ids", multiple=True, help="Entry or memory id (repeatable), with no other criteria.")
@click.option("--session", "session_id", help="Within this session (whole, when no filter is given).")
@click.option("--user", "user_id", help="Within this user's items (whole, when no filter is given: "
              "sessions, entries, memories).")
@click.option("--type", "kinds", multiple=True, type=KINDS, help="Only entries of these kinds.")
@click.option("--tag", "tags", multiple=True, help="Only entries with any of these tags.")
@click.option("--before", help="Only entries that occurred before this time.")
@click.option("--after", help="Only entries that occurred at or after this time.")
@click.option("--reason", required=True)
@click.option("--requested-by", required=True)
@click.option("--keep-derived", is_flag=True, help="Keep entries derived from the deleted ones.")
@click.option("--defer", is_flag=True, help="Tombstone now, purge later with `memlog purge`.")
@click.option("--dry-run", is_flag=True, help="List the ids that would go; write nothing.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_context
def delete(ctx: Context, ids: tuple[str, ...], session_id: str | None, user_id: str | None,
           kinds: tuple[str, ...], tags: tuple[str, ...], before: str | None, after: str | None,
           reason: str, requested_by: str, keep_derived: bool, defer: bool, dry_run: bool,
           yes: bool) -> None:
    """Delete entries for good: tombstone, then rewrite every file without them.

    Every criterion given narrows the selection: `--session S --type message`
    deletes the messages of S and nothing else. A session or user without a
    filter goes whole.
    """
    request: dict[str, Any] = {
        "ids": ids or None, "session_id": session_id, "user_id": user_id, "kinds": kinds, "tags": tags,
        "before": before, "after": after, "reason": reason, "requested_by": requested_by,
        "include_derived": not keep_derived}
    if dry_run:
        with ctx.memory() as mem:
            preview = mem.delete(**request, dry_run=True)
        ctx.emit(msgspec.to_builtins(preview), _preview_text(preview))
        return
    _confirm(yes, "Delete for good? This cannot be undone.")
    with ctx.memory() as mem:
        report = mem.delete(**request, defer=defer)
    _report(ctx, report, "deletion")


def _preview_text(preview: DeletionReport) -> str:
    counts = ", ".join(f"{kind} {n}" for kind, n in sorted(preview.counts_by_kind.items()))
    lines = [f"dry run: {preview.deleted} item(s) would go ({counts or 'none'}); nothing written"]
    return "\n".join([*lines, *preview.ids])


@click.command()
@click.argument("entry_id")
@click.option("--pattern", "patterns", multiple=True, type=PATTERN)
@click.option("--regex")
@click.option("--reason", required=True)
@click.option("--requested-by", required=True)
@click.option("--defer", is_flag=True)
@pass_context
def redact(ctx: Context, entry_id: str, patterns: tuple[str, ...], regex: str | None, reason: str,
           requested_by: str, defer: bool) -> None:
    """Remove spans from a stored entry (all patterns unless --pattern/--regex)."""
    with ctx.memory() as mem:
        report = mem.redact(entry_id, patterns=patterns, regex=regex, reason=reason,
                            requested_by=requested_by, defer=defer)
    _report(ctx, report, "redaction")


@click.command()
@click.option("--as-of", "as_of", help="Apply retention as of this time (default now).")
@click.option("--defer", is_flag=True)
@click.option("--dry-run", is_flag=True, help="List what would be deleted; write nothing.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_context
def retention(ctx: Context, as_of: str | None, defer: bool, dry_run: bool, yes: bool) -> None:
    """Delete entries older than their kind's retention (reason "retention")."""
    if dry_run:
        with ctx.memory() as mem:
            due = mem.retention_due(as_of=as_of)
        counts = dict(sorted(Counter(due.values()).items()))
        ctx.emit({"dry_run": True, "due": len(due), "counts_by_kind": counts, "ids": list(due)},
                 f"retention would delete {len(due)} item(s)"
                 + "".join(f"\n  {kind}: {n}" for kind, n in counts.items()))
        return
    _confirm(yes, "Delete every entry past its kind's retention, for good? This cannot be undone.")
    with ctx.memory() as mem:
        report = mem.retention(as_of=as_of, defer=defer)
    _report(ctx, report, "retention")


@click.command()
@pass_context
def purge(ctx: Context) -> None:
    """Run every deferred purge now."""
    with ctx.memory() as mem:
        report = mem.purge()
    _report(ctx, report, "purge")
