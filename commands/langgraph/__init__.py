"""LangGraph's ``BaseStore`` on memlog: ``MemlogStore`` (the extra ``memlog[langgraph]``).

This package imports ``langgraph``; nothing else in memlog imports it, so
``import memlog`` works without the extra. See docs/integrations/langgraph.md.
"""

from .store import DEFAULT_USER, MemlogStore, MemlogStoreAsOf

__all__ = ["DEFAULT_USER", "MemlogStore", "MemlogStoreAsOf"]
