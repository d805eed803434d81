"""Recall: validated queries and their results (:mod:`.search`), who is
reading as a search scope (:mod:`.scope`), the context block within a token
budget (:mod:`.context`, :mod:`.fitting`, :mod:`.instruction`,
:mod:`.resource_sections`) and the restore of an archived session a read
names (:mod:`.restore`). It may import :mod:`commands.app.store`,
:mod:`commands.app.recording`, :mod:`commands.app.resources` and the shared
modules of :mod:`commands.app`.
"""

__all__ = [
    "context",
    "fitting",
    "instruction",
    "resource_sections",
    "restore",
    "scope",
    "search",
]
