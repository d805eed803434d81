"""CLI commands of sessions: start, list, show, update, transcript, close, archive, restore."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from eventstore import InvalidInputError

from .base import Context, pass_context
from .render import field, plain, session_text, transcript_text

if TYPE_CHECKING:
    from ..memory import MemoryLog

__all__ = ["session"]


def parse_meta(pairs: tuple[str, ...]) -> dict[str, str]:
    """``KEY=VALUE`` options as a mapping."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            # the value is not repeated: metadata is content (redacted on ingest, purged on deletion)
            raise InvalidInputError(f"--meta takes KEY=VALUE; a value of {len(pair)} characters "
                                    f"{'has no key' if sep else 'has no ='}")
        out[key] = value
    return out


@click.group()
def session() -> None:
    """Start, list, show, update, read, close, archive and restore sessions."""


@session.command("start")
@click.option("--user", "user_id")
@click.option("--agent", "agents", multiple=True)
@click.option("--tag", "tags", multiple=True)
@click.option("--meta", "meta", multiple=True, help="KEY=VALUE metadata.")
@click.option("--channel")
@click.option("--ephemeral", is_flag=True, help="Pruned after ephemeral_max_age_hours idle, or past "
              "ephemeral_max_count sessions.")
@pass_context
def session_start(ctx: Context, user_id: str | None, agents: tuple[str, ...], tags: tuple[str, ...],
                  meta: tuple[str, ...], channel: str | None, ephemeral: bool) -> None:
    """Start a session."""
    ctx.write(lambda m: m.start_session(user_id=user_id, agent_ids=agents, tags=tags,
                                         metadata=parse_meta(meta), channel=channel, ephemeral=ephemeral),
              "started session")


@session.command("list")
@click.option("--user", "user_id")
@click.option("--archived", is_flag=True, help="List archived sessions instead.")
@pass_context
def session_list(ctx: Context, user_id: str | None, archived: bool) -> None:
    """List sessions."""
    with ctx.reading() as mem:
        found = mem.sessions(user_id=user_id, archived=archived)
    ctx.emit(plain(found), lambda: "\n".join(
        f"{field(s.id)}  user={field(s.user_id or '-')}  entries={s.statistics['entries']}  "
        f"started={s.started_at}"
        for s in found) or "no sessions")


@session.command("show")
@click.argument("session_id")
@pass_context
def session_show(ctx: Context, session_id: str) -> None:
    """Show a session's manifest and statistics."""
    with ctx.reading() as mem:
        found = mem.session(session_id)
    ctx.emit(plain(found), lambda: session_text(found))


@session.command("archive")
@click.argument("session_id")
@pass_context
def session_archive(ctx: Context, session_id: str) -> None:
    """Archive a session (left out of default search and context)."""
    def act(m: MemoryLog) -> str:
        m.archive_session(session_id)
        return session_id

    ctx.write(act, "archived session")


@session.command("restore")
@click.argument("session_id")
@pass_context
def session_restore(ctx: Context, session_id: str) -> None:
    """Restore an archived session."""
    def act(m: MemoryLog) -> str:
        m.restore_session(session_id)
        return session_id

    ctx.write(act, "restored session")


@session.command("update")
@click.argument("session_id")
@click.option("--agent", "agents", multiple=True, help="Replace the agents (repeat the option).")
@click.option("--tag", "tags", multiple=True, help="Replace the tags (repeat the option).")
@click.option("--meta", "meta", multiple=True, help="KEY=VALUE metadata, merged into the session's.")
@click.option("--clear-agents", is_flag=True, help="Remove every agent.")
@click.option("--clear-tags", is_flag=True, help="Remove every tag.")
@pass_context
def session_update(ctx: Context, session_id: str, agents: tuple[str, ...], tags: tuple[str, ...],
                   meta: tuple[str, ...], clear_agents: bool, clear_tags: bool) -> None:
    """Change a session's agents, tags or metadata."""
    if (agents and clear_agents) or (tags and clear_tags):
        raise InvalidInputError("give --agent or --clear-agents (and --tag or --clear-tags), not both")

    def act(m: MemoryLog) -> str:
        m.update_session(session_id, agent_ids=agents if agents or clear_agents else None,
                         tags=tags if tags or clear_tags else None,
                         metadata=parse_meta(meta) if meta else None)
        return session_id

    ctx.write(act, "updated session")


@session.command("transcript")
@click.argument("session_id")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True)
@pass_context
def session_transcript(ctx: Context, session_id: str, limit: int, offset: int) -> None:
    """A session's messages in the order they occurred, a page at a time."""
    with ctx.reading() as mem:
        page = mem.transcript(session_id, limit=limit, offset=offset)
    ctx.emit(plain(page), lambda: transcript_text(page))


@session.command("close")
@click.argument("session_id")
@click.option("--reason", help="Why it was closed (kept in the log).")
@pass_context
def session_close(ctx: Context, session_id: str, reason: str | None) -> None:
    """Close a session: it takes no new entries and stays readable."""
    def act(m: MemoryLog) -> str:
        m.close_session(session_id, reason)
        return session_id

    ctx.write(act, "closed session")
