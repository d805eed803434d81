"""The write tools: remember, forget, record, complete_task, edit, start_session,
close_session, checkpoint and delete.

A read-only server registers none of them and refuses a call to any with
``E_READ_ONLY`` (:mod:`commands.mcp.server`). Each names only the user's own
sessions, entries and memories (:class:`~commands.mcp.scope.Guard`); the
server's agent, when given, is the agent of what it records. Deletions and
forgetting go through the privacy pipeline (tombstone, purge, verification),
requested by the server's actor.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from pydantic import StrictBool
from typing_extensions import TypedDict  # pydantic (the SDK) reads these below Python 3.12

from eventstore import AbortedError, EntryKind, FindingStatus, InvalidInputError, Level, Role

from ..app.store.validate import check_flag
from ..memory import MemoryLog
from .results import DeletionOut, SessionOut, WrittenOut, deletion_out, session_out
from .scope import Guard, ServerScope

__all__ = ["KIND_FIELDS", "WRITE_TOOLS", "AlternativeIn", "RecordKind", "WriteTools"]

RecordKind = Literal["message", "decision", "finding", "lesson", "task", "handoff"]

# The fields each kind takes beyond session_id, kind, content, tags, occurred_at and agent_id.
KIND_FIELDS: dict[str, frozenset[str]] = {
    "message": frozenset({"role", "topic", "tool_call_id", "parent_id"}),
    "decision": frozenset({"rationale", "alternatives", "impact", "approved_by"}),
    "finding": frozenset({"severity", "category", "evidence", "recommendation", "status"}),
    "lesson": frozenset(), "task": frozenset(), "handoff": frozenset(),
}

class AlternativeIn(TypedDict):
    """A decision's alternative with the reason it was rejected (seed 000)."""

    option: str
    rejected_reason: NotRequired[str]


WRITE_TOOLS = frozenset({"remember", "forget", "record", "complete_task", "start_session",
                         "close_session", "checkpoint", "delete", "update_finding", "edit"})


class WriteTools:
    """The tools that write, for the server's user (or, unscoped, a named one)."""

    def __init__(self, mem: MemoryLog, scope: ServerScope) -> None:
        self.mem = mem
        self.scope = scope
        self.guard = Guard(mem, scope)

    def _written(self, item_id: str) -> WrittenOut:
        return {"id": item_id, "seq": self.mem.last_seq}

    def remember(self, key: str, content: str, user_id: str | None = None,
                 session_id: str | None = None) -> WrittenOut:
        """Remember content for the user under a key (replacing an earlier one);
        session_id: one of the user's sessions, where it was said. Returns the memory's id."""
        sid = None if session_id is None else self.guard.session(session_id).id
        return self._written(self.mem.remember(self.guard.user(user_id), key, content, sid))

    def forget(self, key: str, user_id: str | None = None) -> DeletionOut:
        """Forget the user's memory under a key, for good: every saved version
        is erased from every file (the purge is verified)."""
        return deletion_out(self.mem.forget(self.guard.user(user_id), key, requested_by=self.scope.actor))

    def record(self, session_id: str, kind: RecordKind, content: str, role: Role | None = None,
               topic: str | None = None, tool_call_id: str | None = None, rationale: str | None = None,
               alternatives: list[str | AlternativeIn] | None = None, impact: Level | None = None,
               approved_by: list[str] | None = None, severity: Level | None = None,
               category: str | None = None, evidence: str | None = None,
               recommendation: str | None = None, status: FindingStatus | None = None,
               tags: list[str] | None = None, occurred_at: str | None = None,
               agent_id: str | None = None, parent_id: str | None = None) -> WrittenOut:
        """Record an entry in one of the user's sessions: a message (role needed;
        topic, tool_call_id, parent_id: the message of the session it answers),
        a decision (content is what was decided; rationale, alternatives: each an
        option or {option, rejected_reason}; impact, approved_by), a finding
        (content is the description; severity, category, evidence,
        recommendation, status), a lesson, a task or a handoff. Fields of
        another kind are refused."""
        fields = {"role": role, "topic": topic, "tool_call_id": tool_call_id, "rationale": rationale,
                  "alternatives": alternatives, "impact": impact, "approved_by": approved_by,
                  "severity": severity, "category": category, "evidence": evidence,
                  "recommendation": recommendation, "status": status, "parent_id": parent_id}
        given = {k: v for k, v in fields.items() if v is not None}
        wrong = sorted(set(given) - KIND_FIELDS[kind])
        if wrong:
            raise InvalidInputError(f"a {kind} takes no {', '.join(wrong)}")
        sid = self.guard.session(session_id).id
        common: dict[str, Any] = {"tags": tags or (), "occurred_at": occurred_at}
        agent = self.scope.agent or agent_id
        return self._written(self._record(sid, kind, content, given, common, agent))

    def _record(self, sid: str, kind: str, content: str, given: dict[str, Any], common: dict[str, Any],
                agent: str | None) -> str:
        mem = self.mem
        if kind == "message":
            if "role" not in given:
                raise InvalidInputError("a message needs a role (user, assistant, system or tool)")
            return mem.add_message(sid, content=content, agent_id=agent, **given, **common)
        if kind == "decision":
            return mem.record_decision(sid, decision=content, made_by=agent, **given, **common)
        if kind == "finding":
            return mem.record_finding(sid, description=content, agent_id=agent, **given, **common)
        method = {"lesson": mem.record_lesson, "task": mem.add_task, "handoff": mem.record_handoff}[kind]
        return method(sid, content=content, agent_id=agent, **common)

    def complete_task(self, task_id: str, done: bool = True) -> WrittenOut:
        """Mark one of the user's tasks done (done=false opens it again)."""
        self.guard.item(task_id, write=True)
        self.mem.complete_task(task_id, done=done)
        return self._written(task_id)

    def update_finding(self, finding_id: str, status: FindingStatus) -> WrittenOut:
        """Change the status of one of the user's findings (open, in_progress, resolved, ...)."""
        self.guard.item(finding_id, write=True)
        self.mem.update_finding(finding_id, status=status)
        return self._written(finding_id)

    def edit(self, entry_id: str, content: str) -> WrittenOut:
        """Replace the text of one of the user's entries (the earlier text stays
        in its history); ingest redaction applies to the new text."""
        self.guard.item(entry_id, write=True)
        self.mem.edit(entry_id, content=content)
        return self._written(entry_id)

    def start_session(self, agent_ids: list[str] | None = None, tags: list[str] | None = None,
                      metadata: dict[str, str] | None = None, channel: str | None = None,
                      user_id: str | None = None) -> SessionOut:
        """Start a session for the user (the server's agent takes part in it)."""
        agents = list(dict.fromkeys([*([self.scope.agent] if self.scope.agent else []), *(agent_ids or [])]))
        sid = self.mem.start_session(user_id=self.guard.user(user_id), agent_ids=agents, tags=tags or (),
                                     metadata=metadata, channel=channel)
        return session_out(self.mem.session(sid))

    def close_session(self, session_id: str, reason: str | None = None) -> SessionOut:
        """Close one of the user's sessions: it takes no new entries and stays readable."""
        sid = self.guard.session(session_id).id
        self.mem.close_session(sid, reason)
        return session_out(self.mem.session(sid))

    def checkpoint(self, session_id: str, model_id: str | None = None,
                   chat_id: str | None = None) -> WrittenOut:
        """Mark a point of one of the user's sessions to resume from later with
        recover (labels only: the model and the client's chat id)."""
        sid = self.guard.session(session_id).id
        return self._written(self.mem.checkpoint(sid, model_id=model_id, chat_id=chat_id,
                                                 agent_id=self.scope.agent))

    def delete(self, reason: str, ids: list[str] | None = None, session_id: str | None = None,
               kinds: list[EntryKind] | None = None, tags: list[str] | None = None,
               before: str | None = None, after: str | None = None, user_id: str | None = None,
               dry_run: StrictBool = False, confirm: StrictBool = False) -> DeletionOut:
        """Delete the user's entries or memories for good (tombstone, then every
        byte erased from every file): by ids, or by criteria that all narrow
        the user's items together (a session of theirs, kinds, tags, before,
        after; without filters a session goes whole). dry_run=true lists the
        ids that would go and writes nothing; otherwise it needs a reason and
        confirm=true (a JSON boolean), and without it nothing is written."""
        request = self._deletion(ids, session_id, kinds, tags, before, after, user_id)
        if check_flag(dry_run, "dry_run"):
            return deletion_out(self.mem.delete(**request, reason=reason, requested_by=self.scope.actor,
                                                dry_run=True))
        if not check_flag(confirm, "confirm"):
            raise AbortedError("delete needs confirm=true; nothing was deleted")
        return deletion_out(self.mem.delete(**request, reason=reason, requested_by=self.scope.actor))

    def _deletion(self, ids: list[str] | None, session_id: str | None, kinds: list[EntryKind] | None,
                  tags: list[str] | None, before: str | None, after: str | None,
                  user_id: str | None) -> dict[str, Any]:
        """The request's criteria, within the user's own items: ids each checked
        as theirs; criteria always narrowed to the user (and their session)."""
        if ids:
            for item_id in ids:
                self.guard.item(item_id, write=True)
            return {"ids": ids}
        user = self.guard.user(user_id)
        sid = None if session_id is None else self.guard.session(session_id).id
        return {"session_id": sid, "user_id": user, "kinds": kinds, "tags": tags, "before": before,
                "after": after}
