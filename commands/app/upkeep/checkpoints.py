"""Checkpoints and recovery (seed 002).

:func:`checkpoint` marks a point of a session in the log: ``checkpoint.marked``
(ids and labels: the session, its user, an agent, a model id, a chat id, the
time). Nothing is copied: :func:`recover` reads the log **as of** that event,
so it gives the context the session had then (:func:`~commands.app.recall.context.build_context`
as of the seq, at the checkpoint's time) and the session's last messages then
(at most :data:`RECOVERY_MESSAGES`, seed 002's 50). Content deleted or redacted
since never comes back: as-of reads show it deleted.

Only the newest checkpoint of the user (and agent) counts: older than
``checkpoint_valid_days`` (seed 002's 7; 0: never expires) it is ignored, and
no older one can be valid, so :func:`recover` answers None. A deleted session
takes its checkpoints with it: the deletion erases their payloads (the chat
and model ids) and the views drop them.
"""

from __future__ import annotations

from itertools import islice

import msgspec

from eventstore import CheckpointMarked, InvalidInputError, format_micros, now_micros

from .. import log as _log
from ..recall.context import build_context
from ..results import ContextBlock, EntryResult, entry_result
from ..store.entries import new_id
from ..store.store import Store
from ..store.validate import check_id, check_labels

__all__ = ["RECOVERY_MESSAGES", "Recovery", "checkpoint", "recover"]

RECOVERY_MESSAGES = 50  # seed 002: a checkpoint holds the last 50 messages
_DAY = 86_400_000_000


class Recovery(msgspec.Struct, frozen=True):
    """What :func:`recover` gives: the checkpoint, the context as of it and the
    session's last messages then (oldest first)."""

    checkpoint_id: str
    session_id: str
    seq: int
    at: str
    user_id: str | None
    agent_id: str | None
    model_id: str | None
    chat_id: str | None
    context: ContextBlock
    messages: list[EntryResult]


def _label(value: str | None, field: str) -> str | None:
    return None if value is None else check_labels([value], field)[0]


def checkpoint(store: Store, session_id: str, *, model_id: str | None = None, chat_id: str | None = None,
               agent_id: str | None = None) -> str:
    """Mark a checkpoint of a session (open or closed; an archived one is
    restored, as by any write); returns its id. ``agent_id``: the agent it is
    for (default: the session's agent when it has exactly one)."""
    model, chat = _label(model_id, "model id"), _label(chat_id, "chat id")  # checked before any write
    given_agent = None if agent_id is None else check_id(agent_id, "agent id")
    sid = store.writer.live_session(session_id, closed_ok=True)
    with store.read() as views:
        view = views.session(sid)
    if view is None:  # started in the current batch: its manifest is not in the views yet
        raise InvalidInputError("a checkpoint of a session started in the same batch is not supported")
    agent = given_agent if given_agent is not None else (
        view.agent_ids[0] if len(view.agent_ids) == 1 else None)
    event = CheckpointMarked(checkpoint_id=new_id("ckpt"), session_id=sid, at=now_micros(),
                             user_id=view.user_id, agent_id=agent, model_id=model, chat_id=chat)
    store.writer.append(f"session:{sid}", lambda: [event])
    _log.info("checkpoint marked", checkpoint_id=event.checkpoint_id, session_id=sid)
    return event.checkpoint_id


def recover(store: Store, user_id: str, agent_id: str | None = None, *, now: int | None = None,
            budget_tokens: int | None = None, face: str = "cli") -> Recovery | None:
    """The newest checkpoint of ``user_id`` (and ``agent_id``) if still valid,
    with the context and messages as of it; None when there is none or it
    expired. ``face``: how the context's instruction says to save to memory."""
    uid = check_id(user_id, "user id")
    aid = None if agent_id is None else check_id(agent_id, "agent id")
    days = store.settings.checkpoint_valid_days
    when = now_micros() if now is None else now
    with store.read() as views:
        found = next(views.checkpoints(uid, aid), None)
    if found is None or (days and when - found.at > days * _DAY):
        return None
    block = build_context(store, found.session_id, None, budget_tokens, as_of=found.seq, now=found.at,
                          face=face)
    with store.read(found.seq) as views:
        newest = list(islice(views.session_entries(found.session_id, ("message",), newest_first=True),
                             RECOVERY_MESSAGES))
        messages = [entry_result(v) for v in reversed(newest)]
    return Recovery(found.checkpoint_id, found.session_id, found.seq, format_micros(found.at), found.user_id,
                    found.agent_id, found.model_id, found.chat_id, block, messages)
