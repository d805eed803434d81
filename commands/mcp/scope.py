"""The scope guard: what a server started with ``--user U`` may touch.

Such a server serves U alone. Every id a tool names (a session, an entry, a
memory, the ids of a deletion) must belong to U: a session whose user is U,
an entry of one of U's sessions or carrying U's user id, a memory of U. An id
that exists but belongs to someone else is answered exactly like an id that
does not exist: the same error class, code and message (no oracle). The one
thing shared by every user, the store's project context, may be read but
never changed or deleted through a scoped server.

Without ``--user`` the server is unscoped (an admin mode): it serves every
user, and the tools that act for a user take a ``user_id`` argument.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from eventstore import EntryNotFoundError, InvalidInputError, SessionNotFoundError

from ..app import EntryResult, MemoryResult, SessionResult
from ..app.store.validate import check_id
from ..memory import MemoryLog

__all__ = ["Guard", "ServerScope", "named_scope"]


@dataclass(frozen=True)
class ServerScope:
    """Who the server is: its user (None: every user), its agent, and whether
    it refuses every write."""

    user: str | None = None
    agent: str | None = None
    read_only: bool = False
    alias: str | None = None  # how the log names the user: its pseudonym (commands.app.store.pseudonym)

    def __post_init__(self) -> None:
        if self.user is not None:
            check_id(self.user, "user id")
        if self.agent is not None:
            check_id(self.agent, "agent id")

    @property
    def actor(self) -> str:
        """The actor of the server's events, and who requests its deletions:
        ``mcp``, then ``:USER`` and ``@AGENT`` when given (``mcp:alice@coder``);
        the user as its ``alias`` when one is set, so that the log's headers
        never hold a user id that an erasure of the user must take."""
        name = self.alias or self.user
        user = f":{name}" if name is not None else ""
        agent = f"@{self.agent}" if self.agent is not None else ""
        return f"mcp{user}{agent}"


def named_scope(scope: ServerScope, mem: MemoryLog) -> ServerScope:
    """``scope`` with its user's pseudonym as its ``alias`` (a server that
    writes), and the store's writes made as its actor from now on."""
    if scope.user is not None and not scope.read_only and scope.alias is None:
        scope = replace(scope, alias=mem.store.pseudonyms.of(scope.user))
    if not scope.read_only:
        mem.store.set_actor(scope.actor)
    return scope


class Guard:
    """Resolves the ids a tool names, refusing what lies outside the scope."""

    def __init__(self, mem: MemoryLog, scope: ServerScope) -> None:
        self.mem = mem
        self.scope = scope

    def user(self, given: str | None) -> str:
        """The user a tool acts for: the server's own, or (unscoped) the
        ``user_id`` argument, which is then required."""
        if self.scope.user is not None:
            return self.scope.user
        if given is None:
            raise InvalidInputError("user_id is required: this server serves every user")
        return given

    def reader(self, given: str | None) -> str | None:
        """The user a read is scoped to: the server's own, or (unscoped) the
        ``user_id`` argument if any (None: no user filter)."""
        return self.scope.user if self.scope.user is not None else given

    def session(self, session_id: str) -> SessionResult:
        """The session, if it is the user's; an unknown session's error otherwise."""
        found = self.mem.session(session_id)
        if self.scope.user is not None and found.user_id != self.scope.user:
            raise SessionNotFoundError(f"session {found.id} not found")
        return found

    def item(self, item_id: str, *, write: bool = False) -> EntryResult | MemoryResult:
        """The entry or memory, if it is the user's (or, for a read, the
        shared project context); an unknown id's error otherwise."""
        found = self.mem.show(item_id)
        if self.scope.user is None or self._mine(found, shared=not write):
            return found
        raise EntryNotFoundError(f"no entry or memory with id {found.id}")

    def history_target(self, item_id: str) -> None:
        """Refuse a history of anything but the user's items and sessions,
        with the error of an id no event touched."""
        if self.scope.user is None:
            return
        try:
            self.item(item_id)
            return
        except EntryNotFoundError:
            pass
        try:
            self.session(item_id)
        except SessionNotFoundError:
            raise EntryNotFoundError(f"no event ever touched {check_id(item_id, 'id')}") from None

    def _mine(self, found: EntryResult | MemoryResult, shared: bool) -> bool:
        user = self.scope.user
        if isinstance(found, MemoryResult):
            return found.user_id == user
        if found.user_id is not None and found.user_id != user:
            return False
        if found.session_id is not None:
            return self._session_user(found.session_id) == user
        if found.user_id is not None:
            return True
        return shared and found.type == "project"

    def _session_user(self, session_id: str) -> str | None:
        try:
            return self.mem.session(session_id).user_id
        except SessionNotFoundError:
            return None
