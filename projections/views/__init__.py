"""The views projection: sessions, entries, memories, deletions and statistics
in an LMDB environment, temporal (each version keeps the seq interval in which
it was current), so an as-of read is a lookup.

- :class:`ViewStore` owns the environment and applies events (:mod:`.apply`,
  with the pure reducers of :mod:`.reducers`) with the checkpoint in the same
  transaction;
- :class:`ViewReader` reads it, current or as of a seq (:mod:`.read`); entries
  are stored without content and resolved from the log;
- :mod:`.keys` holds the key layout.
"""

from .read import ViewReader
from .store import VIEW_DBS, ViewStore

__all__ = ["VIEW_DBS", "ViewReader", "ViewStore"]
