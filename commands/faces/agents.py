"""The facade's part for agents (seed 002's ``listAgents`` and
``getCategoryCounts``) and a finding's status (seed 000)."""

from __future__ import annotations

from ..app import Store
from ..app.sessions import agents as _agents

__all__ = ["AgentsFace"]


class AgentsFace:
    """Mixed into :class:`~commands.memory.MemoryLog`."""

    store: Store

    def agents(self, user_id: str | None = None) -> list[_agents.AgentResult]:
        """The agents of every session, or of ``user_id``'s sessions: each with
        its entries counted by kind, its sessions and its last activity
        (read from the views, without reading content)."""
        return _agents.agents(self.store, user_id)
