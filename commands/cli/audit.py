"""The ``audit`` group: verify the chain, read as of a point, history, the raw
log, and the deletion ledger."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import click
import msgspec

from eventstore import EventLog, parse_time

from .base import KINDS, Context, LazyChoice, pass_context
from .render import block, entry_text, field, hits_text, memories_text, session_text

if TYPE_CHECKING:
    from ..app import PointInTime

__all__ = ["audit"]


@click.group()
def audit() -> None:
    """Audit the log: verify the chain, read as of a point, history, deletions."""


@audit.command("verify")
@pass_context
def audit_verify(ctx: Context) -> None:
    """Walk the hash chain; exit 1 when any stored byte was changed."""
    ctx.check_dir(write=False)
    if ctx.log is None:  # a shared --log is on its server
        from ..app import require_store
        require_store(ctx.data_dir)
    with EventLog.open(ctx.log_dir) as log:
        result = log.verify()
    data = {"ok": result.ok, "events": result.events, "head": result.head,
            "first_bad_seq": result.first_bad_seq, "problem": result.problem}
    if result.ok:
        ctx.emit(data, f"ok: {result.events} events, chain verified to seq {result.head}")
    else:
        ctx.emit(data, f"FAILED at seq {result.first_bad_seq}: {field(result.problem)}")
        sys.exit(1)


@audit.group("at")
@click.argument("point")
@click.pass_context
def audit_at(click_ctx: click.Context, point: str) -> None:
    """Read as of POINT: a time (ISO 8601 with zone) or @SEQ."""
    click_ctx.meta["memlog.point"] = point


@contextlib.contextmanager
def _past(click_ctx: click.Context) -> Iterator[tuple[Context, PointInTime]]:
    """The CLI context and the store read as of the point given to ``audit at``."""
    ctx = click_ctx.find_object(Context)
    assert ctx is not None
    with ctx.reading() as mem:
        yield ctx, mem.as_of(str(click_ctx.meta["memlog.point"]))


@audit_at.command("entry")
@click.argument("entry_id")
@click.pass_context
def at_entry(click_ctx: click.Context, entry_id: str) -> None:
    """An entry as memlog knew it then (deleted content shows as deleted)."""
    with _past(click_ctx) as (ctx, past):
        item = past.show(entry_id)
    ctx.emit({"as_of_seq": past.seq, **msgspec.to_builtins(item)},
             lambda: f"as of seq {past.seq}:\n" + entry_text(item))


@audit_at.command("session")
@click.argument("session_id")
@click.pass_context
def at_session(click_ctx: click.Context, session_id: str) -> None:
    """A session's manifest and statistics then."""
    with _past(click_ctx) as (ctx, past):
        found = past.session(session_id)
    ctx.emit({"as_of_seq": past.seq, **msgspec.to_builtins(found)},
             lambda: f"as of seq {past.seq}:\n" + session_text(found))


@audit_at.command("search")
@click.argument("query")
@click.option("--type", "kinds", multiple=True, type=KINDS)
@click.option("--session", "session_id")
@click.option("--user", "user_id", help="What this user could see then.")
@click.option("--agent", "agent_id", help="What this agent could see then.")
@click.option("--limit", type=click.IntRange(1, 1000), default=10)
@click.pass_context
def at_search(click_ctx: click.Context, query: str, kinds: tuple[str, ...], session_id: str | None,
              user_id: str | None, agent_id: str | None, limit: int) -> None:
    """Search as it would have answered then."""
    with _past(click_ctx) as (ctx, past):
        hits = past.search(query, kinds=kinds, session_id=session_id, user_id=user_id, agent_id=agent_id,
                           limit=limit)
    ctx.emit(msgspec.to_builtins(hits), lambda: f"as of seq {past.seq}:\n" + hits_text(hits))


@audit_at.command("context")
@click.argument("session_id")
@click.option("--query")
@click.option("--budget", type=click.IntRange(50, 1_000_000), default=None,
              help="Token budget (default from settings: 2000).")
@click.pass_context
def at_context(click_ctx: click.Context, session_id: str, query: str | None, budget: int | None) -> None:
    """The context block as it would have been built then."""
    with _past(click_ctx) as (ctx, past):
        found = past.context(session_id, query=query, budget_tokens=budget)
    ctx.emit({"as_of_seq": past.seq, **found.to_dict()},
             lambda: f"as of seq {past.seq}:\n" + (block(found.text) or "(nothing to say yet)"))


@audit_at.command("memories")
@click.option("--user", "user_id", required=True)
@click.pass_context
def at_memories(click_ctx: click.Context, user_id: str) -> None:
    """A user's memories then."""
    with _past(click_ctx) as (ctx, past):
        found = past.memories(user_id)
    ctx.emit(msgspec.to_builtins(found), lambda: f"as of seq {past.seq}:\n" + memories_text(found))


@audit.command("history")
@click.argument("item_id")
@pass_context
def audit_history(ctx: Context, item_id: str) -> None:
    """Every event that touched an entry, memory or session."""
    with ctx.reading() as mem:
        items = mem.history(item_id)

    def text() -> str:
        lines = []
        for i in items:
            extra = "".join(f"\n      {k}: {field(v)}" for k, v in (
                ("reason", i.reason), ("request", i.request_id), ("occurred_at", i.occurred_at),
                ("content", i.content)) if v)
            lines.append(f"@{i.seq:<6} {i.recorded_at}  {field(i.type):<18} by {field(i.actor)}: "
                         f"{field(i.what)}{extra}")
        return "\n".join(lines)

    ctx.emit(msgspec.to_builtins(items), text)


@audit.command("log")
@click.option("--since")
@click.option("--until")
@click.option("--stream")
@click.option("--type", "type_")
@click.option("--actor")
@click.option("--limit", type=click.IntRange(1, 1_000_000), default=100, show_default=True)
@pass_context
def audit_log(ctx: Context, since: str | None, until: str | None, stream: str | None,
              type_: str | None, actor: str | None, limit: int) -> None:
    """Filter the raw log (headers only: no content)."""
    from ..app.audit.reads import filter_log
    with ctx.reading() as mem:
        rows = list(filter_log(mem.store, since, until, stream, type_, actor, limit))
    ctx.emit(rows, lambda: "\n".join(
        f"@{r['seq']:<6} {r['recorded_at']}  {field(r['type']):<18} {field(r['stream']):<24} "
        f"v{r['version']:<4} by {field(r['actor'])}{'  (payload erased)' if r['erased'] else ''}"
        for r in rows) or "no events")


def _formats() -> tuple[str, ...]:
    from ..app.audit.reports import FORMATS
    return tuple(FORMATS)


@audit.command("deletions")
@click.option("--since")
@click.option("--until")
@click.option("--format", "fmt", type=LazyChoice(_formats), default=None)
@pass_context
def audit_deletions(ctx: Context, since: str | None, until: str | None, fmt: str | None) -> None:
    """Every deletion request: what, by whom, why, when, and the purge's verification."""
    from ..app.audit.reports import deletion_rows, render_deletions
    start = None if since is None else parse_time(since)
    end = None if until is None else parse_time(until)
    with ctx.reading() as mem:
        rows = deletion_rows(mem.deletions(), start, end)
    chosen = fmt or ("json" if ctx.json else "text")
    click.echo(render_deletions(rows, chosen))
