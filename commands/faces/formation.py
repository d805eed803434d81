"""The facade's part for memory that forms itself:
rule-based extraction (seed 002), dedup of lessons (seed 004) (issue 18).
"""

from __future__ import annotations

from ..app import Store
from ..app.summarise import Summariser

__all__ = ["FormationFace"]


class FormationFace:
    """Mixed into :class:`~commands.memory.MemoryLog`."""

    store: Store
    summariser: Summariser
