"""The embedded LMDB backend of the event log.

A main environment holds headers, indexes and meta (:mod:`.layout`); payloads
live in segment environments of 65,536 seqs (:mod:`.segments`), so a purge
rewrites only the segments that held erased payloads (:mod:`.purge`).
"""

from .backend import LmdbBackend
from .segments import DEFAULT_SPAN

__all__ = ["DEFAULT_SPAN", "LmdbBackend"]
