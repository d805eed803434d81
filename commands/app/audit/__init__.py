"""Audit: as-of reads, history and the raw log (:mod:`.reads`; its names are
this face's) and the deletion reports (:mod:`.reports`). It may import every
subpackage of :mod:`commands.app` but ``ops``.
"""

from .reads import HistoryItem, PointInTime, filter_log, history

__all__ = [
    "HistoryItem",
    "PointInTime",
    "filter_log",
    "history",
]
