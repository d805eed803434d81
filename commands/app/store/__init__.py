"""The store and the parts it is composed of: the log and projections it opens
(:mod:`.store`), the settings (:mod:`.settings`), the validation every input
goes through (:mod:`.validate`), the entry factory with ingest redaction
(:mod:`.entries`, :mod:`.redaction`, :mod:`.patterns`), the writer
(:mod:`.writer`), user pseudonyms (:mod:`.pseudonym`) and the batched access
record (:mod:`.access`). It may import ``eventstore``, ``projections``, the
model of resources (:mod:`commands.app.resources`) and the shared
``log``, ``metrics`` and ``results`` of :mod:`commands.app`; no other
subpackage.
"""

from .store import Store, holds_store, require_store

__all__ = ["Store", "holds_store", "require_store"]
