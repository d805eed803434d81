"""CLI commands that write entries and memories: add, task done, remember, forget."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click
from click.decorators import FC

from eventstore import PurgeUnverifiedError

from .base import LEVEL, ROLE, Context, pass_context, stdin_value

if TYPE_CHECKING:
    from ..memory import MemoryLog

__all__ = ["add", "forget", "remember", "task"]


@click.group()
def add() -> None:
    """Record an entry: message, decision, finding, lesson, task, handoff, preference, project."""


_at = click.option("--at", "occurred_at", help="When it happened (ISO 8601 with zone).")
_tags = click.option("--tag", "tags", multiple=True)
_STDIN = "; - reads it from stdin"


def _text(name: str, what: str, required: bool = False) -> Callable[[FC], FC]:
    """A content-like option; ``-`` reads its value from stdin (one option per command)."""
    return click.option(name, required=required, callback=stdin_value, help=what + _STDIN)


@add.command("message")
@click.argument("session_id")
@click.option("--role", required=True, type=ROLE)
@_text("--content", "The message", required=True)
@click.option("--agent", "agent_id")
@click.option("--topic")
@click.option("--tool-call-id", help="The tool call a message of role 'tool' answers.")
@click.option("--parent", "parent_id", help="The message of the same session this one answers.")
@_tags
@_at
@pass_context
def add_message(ctx: Context, session_id: str, role: str, content: str, agent_id: str | None,
                topic: str | None, tool_call_id: str | None, parent_id: str | None, tags: tuple[str, ...],
                occurred_at: str | None) -> None:
    """Record a conversation message."""
    ctx.write(lambda m: m.add_message(session_id, role=role, content=content, agent_id=agent_id,
                                        topic=topic, tags=tags, occurred_at=occurred_at,
                                        tool_call_id=tool_call_id, parent_id=parent_id), "recorded")


@add.command("decision")
@click.argument("session_id")
@_text("--decision", "What was decided", required=True)
@_text("--rationale", "Why")
@click.option("--alternative", "alternatives", multiple=True,
              help="An option considered; 'OPTION: reason' gives the reason it was rejected.")
@click.option("--impact", type=LEVEL)
@click.option("--made-by")
@click.option("--approved-by", multiple=True)
@_tags
@_at
@pass_context
def add_decision(ctx: Context, session_id: str, decision: str, rationale: str | None,
                 alternatives: tuple[str, ...], impact: str | None, made_by: str | None,
                 approved_by: tuple[str, ...], tags: tuple[str, ...], occurred_at: str | None) -> None:
    """Record a decision."""
    pairs = [_alternative(a) for a in alternatives]
    ctx.write(lambda m: m.record_decision(
        session_id, decision=decision, rationale=rationale, alternatives=pairs, impact=impact,
        made_by=made_by, approved_by=approved_by, tags=tags, occurred_at=occurred_at), "recorded")


def _alternative(text: str) -> str | dict[str, str]:
    """``OPTION: reason`` (split at the first colon and space) as an option and the
    reason it was rejected; a text without one, or with an empty side, is an option alone."""
    option, sep, reason = text.partition(": ")
    if not (sep and option.strip() and reason.strip()):
        return text
    return {"option": option, "rejected_reason": reason}


@add.command("finding")
@click.argument("session_id")
@_text("--description", "What was found", required=True)
@click.option("--severity", type=LEVEL)
@click.option("--category")
@_text("--evidence", "What shows it")
@_text("--recommendation", "What to do")
@click.option("--agent", "agent_id")
@_tags
@_at
@pass_context
def add_finding(ctx: Context, session_id: str, description: str, severity: str | None,
                category: str | None, evidence: str | None, recommendation: str | None,
                agent_id: str | None, tags: tuple[str, ...], occurred_at: str | None) -> None:
    """Record a finding."""
    ctx.write(lambda m: m.record_finding(
        session_id, description=description, severity=severity, category=category, evidence=evidence,
        recommendation=recommendation, agent_id=agent_id, tags=tags, occurred_at=occurred_at),
        "recorded")


def _simple(kind: str, method: str, helptext: str) -> None:
    @add.command(kind, help=helptext)
    @click.argument("session_id")
    @_text("--content", "The text", required=True)
    @click.option("--agent", "agent_id")
    @_tags
    @_at
    @pass_context
    def command(ctx: Context, session_id: str, content: str, agent_id: str | None,
                tags: tuple[str, ...], occurred_at: str | None) -> None:
        kwargs: dict[str, Any] = {"content": content, "occurred_at": occurred_at, "tags": tags,
                                  "agent_id": agent_id}
        ctx.write(lambda m: getattr(m, method)(session_id, **kwargs), "recorded")


_simple("lesson", "record_lesson", "Record a lesson learned.")
_simple("task", "add_task", "Add an open task.")
_simple("handoff", "record_handoff", "Record a handoff for the next session.")


@add.command("project")
@click.argument("session_id", required=False)
@_text("--content", "The text", required=True)
@_at
@pass_context
def project(ctx: Context, session_id: str | None, content: str, occurred_at: str | None) -> None:
    """Record project context (stack, goals): in a session (its user's sessions of the
    same project see it), or without SESSION_ID shared by every session of the store."""
    ctx.write(lambda m: m.set_project_context(session_id, content=content, occurred_at=occurred_at),
              "recorded")


@add.command("preference")
@click.option("--user", "user_id", required=True)
@click.option("--key", required=True)
@_text("--value", "The preference", required=True)
@click.option("--category")
@click.option("--confidence", type=float)
@click.option("--session", "session_id", help="The session it was stated in (one of the user's).")
@pass_context
def add_preference(ctx: Context, user_id: str, key: str, value: str, category: str | None,
                   confidence: float | None, session_id: str | None) -> None:
    """Record a user-scoped preference; a later value of the same key replaces it in context."""
    ctx.write(lambda m: m.set_preference(user_id, key=key, value=value, category=category,
                                           confidence=confidence, session_id=session_id), "recorded")


@click.group()
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

    ctx.write(act, "updated task")


@click.command()
@click.option("--user", "user_id", required=True)
@click.option("--session", "session_id", help="The session it was said in (one of the user's).")
@click.argument("key")
@click.argument("content", callback=stdin_value)
@pass_context
def remember(ctx: Context, user_id: str, session_id: str | None, key: str, content: str) -> None:
    """Remember CONTENT for a user under KEY (CONTENT - reads it from stdin)."""
    ctx.write(lambda m: m.remember(user_id, key, content, session_id), "remembered")


@click.command()
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
    if not report.verified:
        raise PurgeUnverifiedError(f"the purge of {report.request_id} is not verified: "
                                   f"{'; '.join(report.findings or report.checks)}")


@click.command()
@click.argument("entry_id")
@_text("--content", "The new text", required=True)
@pass_context
def edit(ctx: Context, entry_id: str, content: str) -> None:
    """Replace the text of entry ENTRY_ID (its earlier text stays in its history)."""
    def act(m: MemoryLog) -> str:
        m.edit(entry_id, content=content)
        return entry_id

    ctx.write(act, "edited")
