"""Upkeep: the work a store is due as it grows. Compaction and its check on
write (:mod:`.compaction`, :mod:`.watch`), session summaries and their
rewrite after an erasure (:mod:`.summaries`, :mod:`.summariser`), memory
resources (:mod:`.resources`, :mod:`.resource_declare`), extraction on close
(:mod:`.extraction`), checkpoints (:mod:`.checkpoints`), idle and ephemeral
sessions (:mod:`.idle`), retention by count (:mod:`.retention_count`) and
``memlog maintain`` with its steps and schedule (:mod:`.maintain`,
:mod:`.steps`, :mod:`.loop`). It may import :mod:`commands.app.store`,
:mod:`commands.app.recording`, :mod:`commands.app.recall`,
:mod:`commands.app.forgetting`, :mod:`commands.app.resources` and the shared
modules of :mod:`commands.app`.
"""

__all__ = [
    "checkpoints",
    "compaction",
    "extraction",
    "idle",
    "loop",
    "maintain",
    "resource_declare",
    "resources",
    "retention_count",
    "steps",
    "summaries",
    "summariser",
    "watch",
]
