"""Forgetting: the requests (:mod:`.requests`: delete, forget, redact,
retention, purge; their names are this face's), the pipeline that runs them
(:mod:`.pipeline`), what a request selects (:mod:`.selection`,
:mod:`.companions`), the purge and its journal (:mod:`.purging`,
:mod:`.journal`), the forensic scan (:mod:`.scan`, :mod:`.scanner`) and the
local purge of a shared log's deletions (:mod:`.shared_purge`). It may import
:mod:`commands.app.store`, :mod:`commands.app.recording`,
:mod:`commands.app.recall` and the shared modules of :mod:`commands.app`.
"""

from .requests import criteria_of, delete, deletions, forget, preview, purge, redact, retention, retention_due

__all__ = [
    "criteria_of",
    "delete",
    "deletions",
    "forget",
    "preview",
    "purge",
    "redact",
    "retention",
    "retention_due",
]
