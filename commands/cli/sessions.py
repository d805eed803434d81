"""CLI commands of sessions: start, list, show, archive, restore."""

from __future__ import annotations

import click

from eventstore import InvalidInputError

from ..memory import MemoryLog
from .base import Context, pass_context
from .render import field, plain, session_text

__all__ = ["session"]


def parse_meta(pairs: tuple[str, ...]) -> dict[str, str]:
    """``KEY=VALUE`` options as a mapping."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidInputError(f"--meta takes KEY=VALUE, got {pair!r}")
        out[key] = value
    return out


@click.group()
def session() -> None:
    """Start, list, show, archive and restore sessions."""


@session.command("start")
@click.option("--user", "user_id")
@click.option("--agent", "agents", multiple=True)
@click.option("--tag", "tags", multiple=True)
@click.option("--meta", "meta", multiple=True, help="KEY=VALUE metadata.")
@click.option("--channel")
@pass_context
def session_start(ctx: Context, user_id: str | None, agents: tuple[str, ...], tags: tuple[str, ...],
                  meta: tuple[str, ...], channel: str | None) -> None:
    """Start a session."""
    ctx.write(lambda m: m.start_session(user_id=user_id, agent_ids=agents, tags=tags,
                                         metadata=parse_meta(meta), channel=channel), "started session")


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
