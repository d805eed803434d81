"""The facade's part for checkpoints and recovery (seed 002),
retention by count, ephemeral and idle sessions (seeds 000, 004) (issue 18).
"""

from __future__ import annotations

from ..app import Store
from ..app.summarise import Summariser

__all__ = ["UpkeepFace"]


class UpkeepFace:
    """Mixed into :class:`~commands.memory.MemoryLog`."""

    store: Store
    summariser: Summariser
