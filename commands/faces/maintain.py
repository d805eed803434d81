"""The facade's part for every due piece of upkeep at once (``memlog maintain``) (issue 18)."""

from __future__ import annotations

from ..app import Store
from ..app.summarise import Summariser

__all__ = ["MaintainFace"]


class MaintainFace:
    """Mixed into :class:`~commands.memory.MemoryLog`."""

    store: Store
    summariser: Summariser
