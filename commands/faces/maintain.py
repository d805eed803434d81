"""The facade's part for every due piece of upkeep at once (``memlog maintain``),
and on a schedule (``memlog maintain --every``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import nullcontext

from ..app import Store
from ..app.maintain import MaintainReport, Progress, maintain
from ..app.maintain_loop import Run, run_every
from ..app.maintain_steps import default_steps
from ..app.summarise import Summariser

__all__ = ["MaintainFace"]


class MaintainFace:
    """Mixed into :class:`~commands.memory.MemoryLog`."""

    store: Store
    summariser: Summariser

    def maintain(self, *, dry_run: bool = False, progress: Progress | None = None) -> MaintainReport:
        """Run every due piece of upkeep once: extraction backlog, compaction,
        resource TTLs, retention by days (``retention_days``) and by count,
        ephemeral sessions, idle sessions
        (see :mod:`commands.app.maintain`). ``dry_run``: list it, write nothing.
        A second run at the same time raises :class:`~eventstore.LockTimeoutError`."""
        return maintain(self.store, self.summariser, default_steps(), dry_run=dry_run, progress=progress)

    def maintain_every(self, interval: float, stop: threading.Event, *,
                       on_run: Callable[[Run], None] | None = None, dry_run: bool = False) -> int:
        """Run :meth:`maintain` every ``interval`` seconds (1 s to 366 days) on
        this open store until ``stop`` is set, typically in a thread of its own;
        ``on_run`` gets each run's :class:`~commands.app.maintain_loop.Run` (its
        report, or its error's code and message: a failed run does not end the
        loop). Returns how many runs there were. A process without an open
        store runs :func:`commands.app.maintain_loop.run_every` with an opener,
        which opens the store for each run and holds nothing in between."""
        return run_every(lambda: nullcontext(self), interval, stop, on_run=on_run, dry_run=dry_run)
