"""CLI commands of checkpoints (seed 002): ``memlog checkpoint`` and ``memlog recover``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from .base import Context, pass_context
from .render import block, field, plain

if TYPE_CHECKING:
    from ..app.upkeep.checkpoints import Recovery

__all__ = ["checkpoint", "recover"]


@click.command()
@click.option("--session", "session_id", required=True, help="The session to mark.")
@click.option("--model", "model_id", help="The model the conversation runs on (a label).")
@click.option("--chat", "chat_id", help="The client's chat id, to resume it (a label).")
@click.option("--agent", "agent_id", help="The agent it is for (default: the session's only agent).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@pass_context
def checkpoint(ctx: Context, session_id: str, model_id: str | None, chat_id: str | None,
               agent_id: str | None, as_json: bool) -> None:
    """Mark a checkpoint of a session, to recover it from later."""
    ctx.json = ctx.json or as_json
    ctx.write(lambda m: m.checkpoint(session_id, model_id=model_id, chat_id=chat_id, agent_id=agent_id),
              "checkpoint")


def _data(found: Recovery | None) -> dict[str, Any]:
    if found is None:
        return {"recovered": False}
    data: dict[str, Any] = plain(found)
    data["context"] = found.context.to_dict()
    return {"recovered": True, **data}


def _text(found: Recovery | None) -> str:
    if found is None:
        return "no valid checkpoint: start a fresh session"
    head = (f"checkpoint {field(found.checkpoint_id)} of session {field(found.session_id)} at {found.at} "
            f"(seq {found.seq}); chat {field(found.chat_id or '-')}, model {field(found.model_id or '-')}, "
            f"{len(found.messages)} messages")
    return head + "\n\n" + (block(found.context.text) or "(nothing to say yet)")


@click.command()
@click.option("--user", "user_id", required=True)
@click.option("--agent", "agent_id")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@pass_context
def recover(ctx: Context, user_id: str, agent_id: str | None, as_json: bool) -> None:
    """The newest checkpoint of a user (and agent) still valid, with the context read as of it."""
    ctx.json = ctx.json or as_json
    with ctx.reading() as mem:
        found = mem.recover(user_id, agent_id)
    ctx.emit(_data(found), lambda: _text(found))
