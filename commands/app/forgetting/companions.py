"""Memories that copy another memory's content, and are deleted with it.

The LangGraph store (:mod:`commands.langgraph.documents`) keeps an item in the
user memory ``lg_<digest>`` and the text it is searched by, a copy of the
value's words, in ``lgix_<digest>``; a namespace's anchor, ``lgns_<digest>``,
holds its labels. Deleting an item's memory by any path (``forget``,
``delete --id``, MCP's ``forget``) deletes its search text too
(:func:`commands.app.forgetting.selection.select`), so no copy of the value outlives it.
"""

from __future__ import annotations

__all__ = ["ITEM_PREFIX", "NAMESPACE_PREFIX", "SEARCH_PREFIX", "companions"]

ITEM_PREFIX = "lg_"
NAMESPACE_PREFIX = "lgns_"
SEARCH_PREFIX = "lgix_"


def companions(key: str) -> tuple[str, ...]:
    """The keys of the memories that copy the content of memory ``key``."""
    if key.startswith(ITEM_PREFIX):
        return (SEARCH_PREFIX + key[len(ITEM_PREFIX):],)
    return ()
