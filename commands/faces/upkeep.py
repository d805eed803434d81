"""The facade's part for checkpoints and recovery (seed 002),
retention by count, ephemeral and idle sessions (seeds 000, 004).
"""

from __future__ import annotations

from ..app import Store
from ..app import checkpoints as _checkpoints
from ..app.summarise import Summariser

__all__ = ["UpkeepFace"]


class UpkeepFace:
    """Mixed into :class:`~commands.memory.MemoryLog`."""

    store: Store
    summariser: Summariser

    def checkpoint(self, session_id: str, *, model_id: str | None = None, chat_id: str | None = None,
                   agent_id: str | None = None) -> str:
        """Mark a checkpoint of a session (seed 002); returns its id. ``agent_id``
        defaults to the session's agent when it has exactly one."""
        return _checkpoints.checkpoint(self.store, session_id, model_id=model_id, chat_id=chat_id,
                                       agent_id=agent_id)

    def recover(self, user_id: str, agent_id: str | None = None,
                face: str = "cli") -> _checkpoints.Recovery | None:
        """The newest checkpoint of a user (and agent) still valid
        (``checkpoint_valid_days``), with the context and the last 50 messages
        read as of it; None when there is none or it expired. ``face`` (cli or
        mcp): how the context's closing instruction says to save to memory."""
        return _checkpoints.recover(self.store, user_id, agent_id, face=face)
