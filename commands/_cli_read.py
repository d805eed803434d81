"""CLI commands that read: show, search, context, sessions, memories, stats."""

from __future__ import annotations

from typing import Any

import click
import msgspec

from ._cli_write import session
from .cli import Context, cli, pass_context
from .results import EntryResult, MemoryResult, SearchResult, SessionResult

KINDS = click.Choice(["message", "decision", "finding", "lesson", "preference", "task", "handoff",
                      "summary", "project"])


def _plain(value: Any) -> Any:
    return msgspec.to_builtins(value)


def _entry_text(item: EntryResult | MemoryResult) -> str:
    if isinstance(item, MemoryResult):
        return f"memory {item.id} ({item.state})\n  user: {item.user_id}\n  key: {item.key}\n" \
               f"  content: {item.content}\n  saved: {item.saved_at}"
    lines = [f"{item.type} {item.id} ({item.state})"]
    if item.content is not None:
        lines.append(f"  content: {item.content}")
    for name in ("session_id", "agent_id", "role", "occurred_at", "recorded_at"):
        value = getattr(item, name)
        if value:
            lines.append(f"  {name}: {value}")
    for name, value in item.details.items():
        if value not in (None, [], ()):
            lines.append(f"  {name}: {value}")
    if item.tags:
        lines.append(f"  tags: {', '.join(item.tags)}")
    if item.redactions:
        lines.append(f"  redacted at ingest: {item.redactions}")
    if item.deleted:
        d = item.deleted
        lines.append(f"  deleted: request {d['request_id']} by {d['requested_by']} at {d['at']}: "
                     f"{d['reason']}")
    if item.redacted:
        r = item.redacted
        lines.append(f"  redacted: {r['spans']} by {r['requested_by']} at {r['at']}: {r['reason']}")
    return "\n".join(lines)


def _session_text(s: SessionResult) -> str:
    stats = s.statistics
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(stats["by_kind"].items())) or "no entries"
    return (f"{s.id}{' (archived)' if s.archived else ''}\n  user: {s.user_id or '-'}\n"
            f"  agents: {', '.join(s.agent_ids) or '-'}\n  tags: {', '.join(s.tags) or '-'}\n"
            f"  started: {s.started_at}\n  entries: {stats['entries']} ({kinds}), "
            f"{stats['size_bytes']} bytes\n  last activity: {stats['last_activity'] or '-'}")


@session.command("list")
@click.option("--user", "user_id")
@click.option("--archived", is_flag=True, help="List archived sessions instead.")
@pass_context
def session_list(ctx: Context, user_id: str | None, archived: bool) -> None:
    """List sessions."""
    with ctx.memory() as mem:
        found = mem.sessions(user_id=user_id, archived=archived)
    ctx.emit(_plain(found), lambda: "\n".join(
        f"{s.id}  user={s.user_id or '-'}  entries={s.statistics['entries']}  started={s.started_at}"
        for s in found) or "no sessions")


@session.command("show")
@click.argument("session_id")
@pass_context
def session_show(ctx: Context, session_id: str) -> None:
    """Show a session's manifest and statistics."""
    with ctx.memory() as mem:
        found = mem.session(session_id)
    ctx.emit(_plain(found), lambda: _session_text(found))


@cli.command()
@click.argument("item_id")
@pass_context
def show(ctx: Context, item_id: str) -> None:
    """Show an entry or memory by id (state: live, redacted, deleted)."""
    with ctx.memory() as mem:
        item = mem.show(item_id)
    ctx.emit(_plain(item), lambda: _entry_text(item))


@cli.command()
@click.option("--user", "user_id", required=True)
@pass_context
def memories(ctx: Context, user_id: str) -> None:
    """List a user's memories."""
    with ctx.memory() as mem:
        found = mem.memories(user_id)
    ctx.emit(_plain(found), lambda: "\n".join(f"{m.key}: {m.content}" for m in found) or "no memories")


def _hits_text(hits: list[SearchResult]) -> str:
    if not hits:
        return "no results"
    return "\n".join(f"{h.score:.3f}  {h.type:<9} {h.id}  {h.occurred_at}\n       {h.snippet}" for h in hits)


@cli.command()
@click.argument("query", default="")
@click.option("--type", "kinds", multiple=True, type=KINDS)
@click.option("--session", "session_id")
@click.option("--agent", "agents", multiple=True)
@click.option("--user", "user_id")
@click.option("--tag", "tags", multiple=True)
@click.option("--since")
@click.option("--until")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option("--sort", type=click.Choice(["relevance", "newest", "oldest"]), default="relevance")
@click.option("--min-relevance", type=click.FloatRange(0, 1), default=0.0)
@click.option("--archived", "include_archived", is_flag=True, help="Include archived sessions.")
@pass_context
def search(ctx: Context, query: str, kinds: tuple[str, ...], session_id: str | None,
           agents: tuple[str, ...], user_id: str | None, tags: tuple[str, ...], since: str | None,
           until: str | None, limit: int, sort: str, min_relevance: float, include_archived: bool) -> None:
    """Search entries: BM25 with fuzzy and prefix matching, ranked with decay."""
    with ctx.memory() as mem:
        hits = mem.search(query, kinds=kinds, session_id=session_id, agent_ids=agents, user_id=user_id,
                          tags=tags, since=since, until=until, limit=limit, sort=sort,
                          min_relevance=min_relevance, include_archived=include_archived)
    ctx.emit(_plain(hits), lambda: _hits_text(hits))


@cli.command()
@click.argument("session_id")
@click.option("--query")
@click.option("--budget", type=click.IntRange(50, 1_000_000), default=None,
              help="Token budget (default from settings: 2000).")
@pass_context
def context(ctx: Context, session_id: str, query: str | None, budget: int | None) -> None:
    """Print the context block to paste into a prompt."""
    with ctx.memory() as mem:
        block = mem.context(session_id, query=query, budget_tokens=budget)
    ctx.emit(block.to_dict(), lambda: block.text or "(nothing to say yet)")


@cli.command()
@pass_context
def stats(ctx: Context) -> None:
    """Event count, head seq, counts by kind, sizes on disk and checkpoints."""
    with ctx.memory() as mem:
        data = mem.stats()

    def text() -> str:
        lines = [f"events: {data['events']} (head seq {data['head_seq']})",
                 f"entries: {data['entries']}"]
        lines += [f"  {k}: {v}" for k, v in sorted(data["by_kind"].items())]
        lines.append("bytes on disk: " + ", ".join(f"{k} {v}" for k, v in data["bytes_on_disk"].items()))
        lines.append("checkpoints: " + ", ".join(f"{k} @{v}" for k, v in data["checkpoints"].items()))
        return "\n".join(lines)

    ctx.emit(data, text)
