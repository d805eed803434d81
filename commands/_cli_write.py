"""CLI commands that write: sessions, entries, memories, tasks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from eventstore import InvalidInputError

from .cli import Context, cli, pass_context
from .memory import MemoryLog

LEVELS = click.Choice(["low", "medium", "high", "critical"])


def _write(ctx: Context, action: Callable[[MemoryLog], str | None], label: str) -> None:
    with ctx.memory() as mem:
        item = action(mem)
        seq = mem.last_seq
    ctx.emit({"id": item, "seq": seq}, f"{label} {item} (seq {seq})" if item else f"{label} (seq {seq})")


def _meta(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidInputError(f"--meta takes KEY=VALUE, got {pair!r}")
        out[key] = value
    return out


@cli.group()
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
    _write(ctx, lambda m: m.start_session(user_id=user_id, agent_ids=agents, tags=tags,
                                          metadata=_meta(meta), channel=channel), "started session")


@session.command("archive")
@click.argument("session_id")
@pass_context
def session_archive(ctx: Context, session_id: str) -> None:
    """Archive a session (left out of default search and context)."""
    def act(m: MemoryLog) -> str:
        m.archive_session(session_id)
        return session_id

    _write(ctx, act, "archived session")


@session.command("restore")
@click.argument("session_id")
@pass_context
def session_restore(ctx: Context, session_id: str) -> None:
    """Restore an archived session."""
    def act(m: MemoryLog) -> str:
        m.restore_session(session_id)
        return session_id

    _write(ctx, act, "restored session")


@cli.group()
def add() -> None:
    """Record an entry: message, decision, finding, lesson, task, handoff, preference, project."""


_at = click.option("--at", "occurred_at", help="When it happened (ISO 8601 with zone).")
_tags = click.option("--tag", "tags", multiple=True)


@add.command("message")
@click.argument("session_id")
@click.option("--role", required=True, type=click.Choice(["user", "assistant", "system", "tool"]))
@click.option("--content", required=True)
@click.option("--agent", "agent_id")
@click.option("--topic")
@_tags
@_at
@pass_context
def add_message(ctx: Context, session_id: str, role: str, content: str, agent_id: str | None,
                topic: str | None, tags: tuple[str, ...], occurred_at: str | None) -> None:
    """Record a conversation message."""
    _write(ctx, lambda m: m.add_message(session_id, role=role, content=content, agent_id=agent_id,
                                        topic=topic, tags=tags, occurred_at=occurred_at), "recorded")


@add.command("decision")
@click.argument("session_id")
@click.option("--decision", required=True)
@click.option("--rationale")
@click.option("--alternative", "alternatives", multiple=True)
@click.option("--impact", type=LEVELS)
@click.option("--made-by")
@click.option("--approved-by", multiple=True)
@_tags
@_at
@pass_context
def add_decision(ctx: Context, session_id: str, decision: str, rationale: str | None,
                 alternatives: tuple[str, ...], impact: str | None, made_by: str | None,
                 approved_by: tuple[str, ...], tags: tuple[str, ...], occurred_at: str | None) -> None:
    """Record a decision."""
    _write(ctx, lambda m: m.record_decision(
        session_id, decision=decision, rationale=rationale, alternatives=alternatives, impact=impact,
        made_by=made_by, approved_by=approved_by, tags=tags, occurred_at=occurred_at), "recorded")


@add.command("finding")
@click.argument("session_id")
@click.option("--description", required=True)
@click.option("--severity", type=LEVELS)
@click.option("--category")
@click.option("--evidence")
@click.option("--recommendation")
@click.option("--agent", "agent_id")
@_tags
@_at
@pass_context
def add_finding(ctx: Context, session_id: str, description: str, severity: str | None,
                category: str | None, evidence: str | None, recommendation: str | None,
                agent_id: str | None, tags: tuple[str, ...], occurred_at: str | None) -> None:
    """Record a finding."""
    _write(ctx, lambda m: m.record_finding(
        session_id, description=description, severity=severity, category=category, evidence=evidence,
        recommendation=recommendation, agent_id=agent_id, tags=tags, occurred_at=occurred_at),
        "recorded")


def _simple(kind: str, method: str, helptext: str) -> None:
    @add.command(kind, help=helptext)
    @click.argument("session_id")
    @click.option("--content", required=True)
    @click.option("--agent", "agent_id")
    @_tags
    @_at
    @pass_context
    def command(ctx: Context, session_id: str, content: str, agent_id: str | None,
                tags: tuple[str, ...], occurred_at: str | None) -> None:
        kwargs: dict[str, Any] = {"content": content, "occurred_at": occurred_at}
        if kind != "project":
            kwargs.update(tags=tags, agent_id=agent_id)
        _write(ctx, lambda m: getattr(m, method)(session_id, **kwargs), "recorded")


_simple("lesson", "record_lesson", "Record a lesson learned.")
_simple("task", "add_task", "Add an open task.")
_simple("handoff", "record_handoff", "Record a handoff for the next session.")
_simple("project", "set_project_context", "Record project context (stack, goals).")


@add.command("preference")
@click.option("--user", "user_id", required=True)
@click.option("--key", required=True)
@click.option("--value", required=True)
@click.option("--category")
@click.option("--confidence", type=float)
@pass_context
def add_preference(ctx: Context, user_id: str, key: str, value: str, category: str | None,
                   confidence: float | None) -> None:
    """Record a user-scoped preference."""
    _write(ctx, lambda m: m.set_preference(user_id, key=key, value=value, category=category,
                                           confidence=confidence), "recorded")


@cli.group()
def task() -> None:
    """Mark tasks done or open."""


@task.command("done")
@click.argument("task_id")
@click.option("--undo", is_flag=True, help="Open the task again.")
@pass_context
def task_done(ctx: Context, task_id: str, undo: bool) -> None:
    """Mark a task done."""
    def act(m: MemoryLog) -> str:
        m.complete_task(task_id, done=not undo)
        return task_id

    _write(ctx, act, "updated task")


@cli.command()
@click.option("--user", "user_id", required=True)
@click.argument("key")
@click.argument("content")
@pass_context
def remember(ctx: Context, user_id: str, key: str, content: str) -> None:
    """Remember CONTENT for a user under KEY."""
    _write(ctx, lambda m: m.remember(user_id, key, content), "remembered")


@cli.command()
@click.option("--user", "user_id", required=True)
@click.argument("key")
@pass_context
def forget(ctx: Context, user_id: str, key: str) -> None:
    """Forget a user's memory under KEY."""
    with ctx.memory() as mem:
        report = mem.forget(user_id, key)
    ctx.emit({"id": report.request_id, "seq": report.seq, "purged": report.purged,
              "verified": report.verified},
             f"forgot {key}: request {report.request_id}, purged and "
             f"{'verified' if report.verified else 'NOT verified'} (seq {report.seq})")
