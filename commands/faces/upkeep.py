"""The facade's part for upkeep: checkpoints and recovery, and every due piece of
upkeep at once (``memlog maintain``), once or on a schedule (``memlog maintain --every``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import nullcontext

from ..app import Store
from ..app.upkeep import checkpoints as _checkpoints
from ..app.upkeep.loop import Run, run_every
from ..app.upkeep.maintain import MaintainReport, Progress, maintain
from ..app.upkeep.steps import default_steps
from ..app.upkeep.summariser import Summariser

__all__ = ["MaintainFace", "UpkeepFace"]


class UpkeepFace:
    """Mixed into :class:`~commands.memory.MemoryLog`."""

    store: Store
    summariser: Summariser

    def checkpoint(self, session_id: str, *, model_id: str | None = None, chat_id: str | None = None,
                   agent_id: str | None = None) -> str:
        """Mark a checkpoint of a session; returns its id. ``agent_id``
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


class MaintainFace:
    """Mixed into :class:`~commands.memory.MemoryLog`."""

    store: Store
    summariser: Summariser

    def maintain(self, *, dry_run: bool = False, progress: Progress | None = None) -> MaintainReport:
        """Run every due piece of upkeep once: extraction backlog, compaction,
        resource TTLs, retention by days (``retention_days``) and by count,
        ephemeral sessions, idle sessions
        (see :mod:`commands.app.upkeep.maintain`). ``dry_run``: list it, write nothing.
        A second run at the same time raises :class:`~eventstore.LockTimeoutError`."""
        return maintain(self.store, self.summariser, default_steps(), dry_run=dry_run, progress=progress)

    def maintain_every(self, interval: float, stop: threading.Event, *,
                       on_run: Callable[[Run], None] | None = None, dry_run: bool = False) -> int:
        """Run :meth:`maintain` every ``interval`` seconds (1 s to 366 days) on
        this open store until ``stop`` is set, typically in a thread of its own;
        ``on_run`` gets each run's :class:`~commands.app.upkeep.loop.Run` (its
        report, or its error's code and message: a failed run does not end the
        loop). Returns how many runs there were. A process without an open
        store runs :func:`commands.app.upkeep.loop.run_every` with an opener,
        which opens the store for each run and holds nothing in between."""
        return run_every(lambda: nullcontext(self), interval, stop, on_run=on_run, dry_run=dry_run)
