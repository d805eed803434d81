"""The facade's part for memory that forms itself:
rule-based extraction (seed 002), dedup of lessons (seed 004).
"""

from __future__ import annotations

from ..app import Store
from ..app.extraction import ExtractionReport, extract_session
from ..app.summarise import Summariser

__all__ = ["FormationFace"]


class FormationFace:
    """Mixed into :class:`~commands.memory.MemoryLog`."""

    store: Store
    summariser: Summariser

    def extract(self, session_id: str, *, dry_run: bool = False) -> ExtractionReport:
        """Extract decisions and lessons (seed 002's rules) from the session's
        messages not extracted yet; ``dry_run`` lists them by message id and
        writes nothing. A lesson close to a live one of its scope reinforces it."""
        return extract_session(self.store, session_id, dry_run=dry_run)
