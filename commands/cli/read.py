"""CLI commands that read: show, memories, search, context, stats.

Each opens an existing store (``E_NO_STORE`` for a directory without one) and
writes nothing but the accesses a search records.
"""

from __future__ import annotations

import click

from eventstore import FINDING_STATUSES

from .base import KINDS, LEVEL, MODE, SORT, SOURCE, Context, pass_context
from .render import block, entry_text, hits_text, memory_page_text, plain

__all__ = ["context", "memories", "search", "show", "stats"]

STATUS = click.Choice(FINDING_STATUSES)


@click.command()
@click.argument("item_id")
@pass_context
def show(ctx: Context, item_id: str) -> None:
    """Show an entry or memory by id (state: live, redacted, deleted)."""
    with ctx.reading() as mem:
        item = mem.show(item_id)
    ctx.emit(plain(item), lambda: entry_text(item))


@click.command()
@click.option("--user", "user_id", required=True)
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@click.option("--offset", type=click.IntRange(0), default=0, show_default=True)
@pass_context
def memories(ctx: Context, user_id: str, limit: int, offset: int) -> None:
    """List a user's memories, a page at a time, with the total."""
    with ctx.reading() as mem:
        page = mem.memory_page(user_id, limit=limit, offset=offset)
    ctx.emit(page.to_dict(), lambda: memory_page_text(page))


@click.command()
@click.argument("query", default="")
@click.option("--type", "kinds", multiple=True, type=KINDS)
@click.option("--session", "session_id")
@click.option("--user", "user_id", help="What this user may see: their sessions and entries, their "
              "preferences and memories, and the shared project context (all searched by default).")
@click.option("--agent", "agent_id", help="What this agent may see: its entries, the sessions it took "
              "part in, and the shared project context.")
@click.option("--by-agent", "agents", multiple=True, help="Only entries written by this agent.")
@click.option("--source", type=SOURCE, default=None,
              help="Search entries, user memories, or both (default: both with --user, else entries).")
@click.option("--mode", type=MODE, default=None,
              help="text (BM25), semantic or hybrid (default: hybrid with an embedder, else text).")
@click.option("--tag", "tags", multiple=True)
@click.option("--topic", help="Only messages of this topic (as recorded with add message --topic).")
@click.option("--since")
@click.option("--until")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option("--sort", type=SORT, default="relevance")
@click.option("--min-relevance", type=click.FloatRange(0, 1), default=0.0)
@click.option("--archived", "include_archived", is_flag=True, help="Include archived sessions.")
@click.option("--status", "statuses", multiple=True, type=STATUS, help="Only findings with this status.")
@click.option("--severity", "severities", multiple=True, type=LEVEL, help="Only findings this severe.")
@pass_context
def search(ctx: Context, query: str, kinds: tuple[str, ...], session_id: str | None, user_id: str | None,
           agent_id: str | None, agents: tuple[str, ...], source: str | None, mode: str | None,
           tags: tuple[str, ...], topic: str | None, since: str | None, until: str | None, limit: int,
           sort: str, min_relevance: float, include_archived: bool, statuses: tuple[str, ...],
           severities: tuple[str, ...]) -> None:
    """Search entries and memories, scoped to a user or an agent when given."""
    with ctx.reading() as mem:
        hits = mem.search(query, kinds=kinds, session_id=session_id, agent_ids=agents, user_id=user_id,
                          agent_id=agent_id, source=source, mode=mode, tags=tags, since=since,
                          until=until, limit=limit, sort=sort, min_relevance=min_relevance,
                          include_archived=include_archived, statuses=statuses, severities=severities,
                          topic=topic)
    ctx.emit(plain(hits), lambda: hits_text(hits))


@click.command()
@click.argument("session_id")
@click.option("--query", help="Rank decisions, lessons and findings by it, and add the best matches "
                               "of the user's earlier messages and memories.")
@click.option("--budget", type=click.IntRange(50, 1_000_000), default=None,
              help="Token budget (default from settings: 2000).")
@pass_context
def context(ctx: Context, session_id: str, query: str | None, budget: int | None) -> None:
    """Print the context block to paste into a prompt."""
    with ctx.reading() as mem:
        found = mem.context(session_id, query=query, budget_tokens=budget)
    ctx.emit(found.to_dict(), lambda: block(found.text) or "(nothing to say yet)")


@click.command()
@pass_context
def stats(ctx: Context) -> None:
    """Event count, head seq, counts by kind, sizes on disk and checkpoints."""
    with ctx.reading() as mem:
        data = mem.stats()

    def text() -> str:
        lines = [f"events: {data['events']} (head seq {data['head_seq']})",
                 f"entries: {data['entries']}"]
        lines += [f"  {k}: {v}" for k, v in sorted(data["by_kind"].items())]
        lines.append("bytes on disk: " + ", ".join(f"{k} {v}" for k, v in data["bytes_on_disk"].items()))
        lines.append("checkpoints: " + ", ".join(f"{k} @{v}" for k, v in data["checkpoints"].items()))
        return "\n".join(lines)

    ctx.emit(data, text)
