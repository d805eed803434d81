"""Recording entries: every kind and its updates, user memories and ``show``
(:mod:`.records`), edits (:mod:`.editing`) and the near-duplicate check on
write (:mod:`.dedup`). It may import :mod:`commands.app.store` and the shared
modules of :mod:`commands.app`.
"""

__all__ = [
    "dedup",
    "editing",
    "records",
]
