"""The facade's part for every due piece of upkeep at once (``memlog maintain``; issue 18)."""

from __future__ import annotations

from ..app import Store
from ..app.maintain import MaintainReport, Progress, maintain
from ..app.maintain_steps import default_steps
from ..app.summarise import Summariser

__all__ = ["MaintainFace"]


class MaintainFace:
    """Mixed into :class:`~commands.memory.MemoryLog`."""

    store: Store
    summariser: Summariser

    def maintain(self, *, dry_run: bool = False, progress: Progress | None = None) -> MaintainReport:
        """Run every due piece of upkeep once: extraction backlog, compaction,
        resource TTLs, retention by count, ephemeral sessions, idle sessions
        (see :mod:`commands.app.maintain`). ``dry_run``: list it, write nothing.
        A second run at the same time raises :class:`~eventstore.LockTimeoutError`."""
        return maintain(self.store, self.summariser, default_steps(), dry_run=dry_run, progress=progress)
